"""Cancelling a run on SQLite: one write transaction, a compare-and-set on its version.

The run moves to `cancelled` only from the version the caller read and only while it is
not finished, so a run that another worker saved meanwhile (a resume that got further)
is not cancelled blind: the caller reads it again and decides. In the same transaction
its open approvals close (`revoked`, with the cancel's reason: nothing of the run runs
any more) and its standing decisions end; the audit gets one `cancelled` event and a
`revoked` event per approval, so the trail says why each card closed.
"""

from __future__ import annotations

import sqlite3

from bot.clock import Clock
from bot.errors import InputError
from store.audit import with_via
from store.records import ApprovalRecord, CancelOutcome, RunRecord, StandingDecision
from store.rows import (
    APPROVAL_COLUMNS,
    RUN_COLUMNS,
    STANDING_COLUMNS,
    row_to_approval,
    row_to_run,
    row_to_standing,
    to_db,
)
from store.runs import CANCELLABLE_STATUSES, check_cancel
from store.sqlite import audit
from store.sqlite.approvals import REVOCABLE
from store.sqlite.connection import Database, fetch_all, fetch_one

_CANCELLABLE = ", ".join(f"'{status}'" for status in sorted(CANCELLABLE_STATUSES))


def cancel_reason(reason: str) -> str:
    """How a closed approval records why (its `revoke_reason`)."""
    return f"run cancelled: {reason}"


class SqliteCancel:
    """`cancel_run` on SQLite (part of the RunStore)."""

    def __init__(self, database: Database, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    async def cancel_run(
        self,
        run_id: str,
        *,
        expected_version: int,
        actor: str,
        reason: str,
        via: str | None = None,
    ) -> CancelOutcome:
        check_cancel(actor=actor, reason=reason)
        at = self._clock()
        at_text = to_db(at)
        why = reason.strip()

        def body(connection: sqlite3.Connection) -> CancelOutcome:
            before = _require_run(connection, run_id)
            row = fetch_one(
                connection,
                "UPDATE runs SET status = 'cancelled', version = version + 1, updated_at = ? "
                f"WHERE run_id = ? AND version = ? AND status IN ({_CANCELLABLE}) "
                f"RETURNING {RUN_COLUMNS}",
                (at_text, run_id, expected_version),
            )
            if row is None:
                return CancelOutcome(won=False, run=before)
            closed = _close_approvals(connection, run_id, actor, cancel_reason(why), at_text)
            standing = _end_standing(connection, run_id, actor, cancel_reason(why), at_text)
            for record in closed:
                audit.append(
                    connection,
                    "revoked",
                    at=at,
                    actor=actor,
                    run_id=run_id,
                    approval_id=record.approval_id,
                    detail=with_via({"reason": record.revoke_reason}, via),
                )
            audit.append(
                connection,
                "cancelled",
                at=at,
                actor=actor,
                run_id=run_id,
                detail=with_via(
                    {
                        "reason": why,
                        "from_status": before.status,
                        "closed": [record.approval_id for record in closed],
                        "standing_ended": [decision.approval_id for decision in standing],
                    },
                    via,
                ),
            )
            return CancelOutcome(
                won=True, run=row_to_run(row), closed=tuple(closed), standing=tuple(standing)
            )

        return await self._db.transaction(body)


def _require_run(connection: sqlite3.Connection, run_id: str) -> RunRecord:
    row = fetch_one(connection, f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
    if row is None:
        raise InputError(f"there is no run with id {run_id!r}")
    return row_to_run(row)


def _close_approvals(
    connection: sqlite3.Connection, run_id: str, actor: str, reason: str, at: str
) -> list[ApprovalRecord]:
    rows = fetch_all(
        connection,
        "UPDATE approvals SET status = 'revoked', revoked_at = ?, revoked_by = ?, "
        f"revoke_reason = ? WHERE run_id = ? AND {REVOCABLE} RETURNING {APPROVAL_COLUMNS}",
        (at, actor, reason, run_id),
    )
    return sorted(
        (row_to_approval(row) for row in rows), key=lambda r: (r.created_at, r.approval_id)
    )


def _end_standing(
    connection: sqlite3.Connection, run_id: str, actor: str, reason: str, at: str
) -> list[StandingDecision]:
    rows = fetch_all(
        connection,
        "UPDATE standing_decisions SET revoked_at = ?, revoked_by = ?, revoke_reason = ? "
        f"WHERE run_id = ? AND revoked_at IS NULL RETURNING {STANDING_COLUMNS}",
        (at, actor, reason, run_id),
    )
    return sorted((row_to_standing(row) for row in rows), key=lambda s: s.created_at)
