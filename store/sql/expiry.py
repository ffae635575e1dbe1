"""When approvals lapse: the SQL of the sweeps that expire approvals past their expiry and
claim the reminders that are due (store.sql.approvals runs them in batches), and
expiring one approval on its own inside a write transaction (a vote that finds it
expired: store.sql.votes).

A sweep's batch claims its rows `FOR UPDATE SKIP LOCKED` (`_claimed`), so a second
sweeper (another replica) skips what another transaction holds, and the conditional
update on the claimed rows stays the last line of defence."""

from __future__ import annotations

from datetime import datetime

from store.records import ApprovalRecord
from store.rows import APPROVAL_COLUMNS, to_db, to_db_optional
from store.seals import DecisionSeals, read_approval
from store.sql import audit
from store.tx import Body, one


def _claimed(due: str, order: str) -> str:
    """The WHERE clause of a sweep's batch: at most `?` of the `due` rows, oldest `order`
    first, skipping rows another transaction holds (`due`'s placeholders, the limit,
    then `due`'s again: the conditional update re-checks every claimed row)."""
    return (
        f"approval_id IN (SELECT approval_id FROM approvals WHERE {due} "
        f"ORDER BY {order}, approval_id LIMIT ? FOR UPDATE SKIP LOCKED) AND {due}"
    )


SWEEP_BATCH = 100
"""Approvals one sweep transaction claims at most (it locks them to its commit)."""
EXPIRABLE = "status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?"
REMINDABLE = (
    "status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL AND remind_at <= ? "
    "AND (expires_at IS NULL OR expires_at > ?)"
)
EXPIRE_DUE = (
    f"UPDATE approvals SET status = 'expired' WHERE {_claimed(EXPIRABLE, 'expires_at')} "
    f"RETURNING {APPROVAL_COLUMNS}"
)
CLAIM_REMINDERS = (
    f"UPDATE approvals SET reminded_at = ? WHERE {_claimed(REMINDABLE, 'remind_at')} "
    f"RETURNING {APPROVAL_COLUMNS}"
)
EXPIRE_ONE = (
    "UPDATE approvals SET status = 'expired' WHERE approval_id = ? AND status = 'pending' "
    f"AND expires_at IS NOT NULL AND expires_at <= ? RETURNING {APPROVAL_COLUMNS}"
)


def expire_one(seals: DecisionSeals, approval_id: str, at: datetime) -> Body[ApprovalRecord | None]:
    """Expire the approval if it is pending and past its expiry at `at` (audited);
    None when it is not."""
    expired = yield one(EXPIRE_ONE, (approval_id, to_db(at)))
    if expired is None:
        return None
    record = read_approval(seals, expired)
    yield from audit_expired(record, at)
    return record


def audit_expired(record: ApprovalRecord, at: datetime) -> Body[None]:
    """The `expired` event of an approval that lapsed at `at`."""
    yield from audit.append(
        "expired",
        at=at,
        actor="store",
        run_id=record.run_id,
        approval_id=record.approval_id,
        detail={"expires_at": to_db_optional(record.expires_at)},
    )
