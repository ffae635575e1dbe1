"""Approvals: every transition is one conditional UPDATE from the expected state.

`decide` moves pending -> approved|rejected only while the approval is unexpired; of two
racing deciders exactly one UPDATE matches, and the other reads back the winner's row.
Expiry and revocation are conditional updates too, and a trigger keeps decided
approvals decided (the one exit: approved -> revoked before the call executes). The
audit event for a transition is written in the same transaction as the transition.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import get_args

from bot.errors import InputError
from store.api import (
    ApprovalRecord,
    ApprovalStatus,
    Decision,
    DecisionOutcome,
    NewApproval,
)
from store.sqlite import audit
from store.sqlite.base import StoreBase
from store.sqlite.connection import fetch_all, fetch_one, where_all
from store.sqlite.rows import APPROVAL_COLUMNS, row_to_approval
from store.sqlite.timefmt import to_db

APPROVAL_STATUSES: frozenset[str] = frozenset(get_args(ApprovalStatus))
DECISIONS: frozenset[str] = frozenset(get_args(Decision))

SELECT_ONE = f"SELECT {APPROVAL_COLUMNS} FROM approvals WHERE approval_id = ?"
EXPIRE_ONE = (
    "UPDATE approvals SET status = 'expired' WHERE approval_id = ? AND status = 'pending' "
    f"AND expires_at IS NOT NULL AND expires_at <= ? RETURNING {APPROVAL_COLUMNS}"
)


class ApprovalsPart(StoreBase):
    async def add_approvals(self, approvals: Sequence[NewApproval]) -> list[ApprovalRecord]:
        at = self._now()
        for new in approvals:
            _check_new(new)

        def body(connection: sqlite3.Connection) -> list[ApprovalRecord]:
            return [_insert_or_get(connection, new, at=at) for new in approvals]

        return await self._db.transaction(body)

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        row = await self._db.read_one(SELECT_ONE, (approval_id,))
        return None if row is None else row_to_approval(row)

    async def list_approvals(
        self,
        *,
        run_id: str | None = None,
        status: ApprovalStatus | None = None,
        limit: int = 100,
    ) -> list[ApprovalRecord]:
        if status is not None and status not in APPROVAL_STATUSES:
            raise InputError(
                f"approval status {status!r} is not one of {sorted(APPROVAL_STATUSES)}"
            )
        where, params = where_all({"run_id = ?": run_id, "status = ?": status})
        rows = await self._db.read(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals {where} "
            "ORDER BY created_at, approval_id LIMIT ?",
            (*params, limit),
        )
        return [row_to_approval(row) for row in rows]

    async def decide(
        self,
        approval_id: str,
        *,
        decision: Decision,
        decider: str,
        reason: str | None,
        message: str | None = None,
        now: datetime | None = None,
    ) -> DecisionOutcome:
        if decision not in DECISIONS:
            raise InputError(f"decision {decision!r} is not one of {sorted(DECISIONS)}")
        if not decider:
            raise InputError("a decision needs a decider")
        at = now or self._now()
        at_text = to_db(at)

        def body(connection: sqlite3.Connection) -> DecisionOutcome:
            row = fetch_one(
                connection,
                "UPDATE approvals SET status = ?, decider = ?, reason = ?, message = ?, "
                "decided_at = ? WHERE approval_id = ? AND status = 'pending' "
                "AND (expires_at IS NULL OR expires_at > ?) "
                f"RETURNING {APPROVAL_COLUMNS}",
                (decision, decider, reason, message, at_text, approval_id, at_text),
            )
            if row is not None:
                record = row_to_approval(row)
                audit.append(
                    connection,
                    "decided",
                    at=at,
                    actor=decider,
                    run_id=record.run_id,
                    approval_id=approval_id,
                    detail={"decision": decision, "reason": reason, "message": message},
                )
                return DecisionOutcome(won=True, record=record)
            return DecisionOutcome(won=False, record=_lost(connection, approval_id, at))

        return await self._db.transaction(body)

    async def expire_due(self, *, now: datetime | None = None) -> list[ApprovalRecord]:
        at = now or self._now()

        def body(connection: sqlite3.Connection) -> list[ApprovalRecord]:
            rows = fetch_all(
                connection,
                "UPDATE approvals SET status = 'expired' WHERE status = 'pending' "
                f"AND expires_at IS NOT NULL AND expires_at <= ? RETURNING {APPROVAL_COLUMNS}",
                (to_db(at),),
            )
            expired = sorted((row_to_approval(row) for row in rows), key=lambda r: r.approval_id)
            for record in expired:
                audit_expired(connection, record, at)
            return expired

        return await self._db.transaction(body)

    async def revoke(self, approval_id: str, *, actor: str, reason: str | None) -> DecisionOutcome:
        if not actor:
            raise InputError("a revocation needs an actor")
        at = self._now()

        def body(connection: sqlite3.Connection) -> DecisionOutcome:
            row = fetch_one(
                connection,
                "UPDATE approvals SET status = 'revoked', revoked_at = ?, revoked_by = ?, "
                "revoke_reason = ? "
                "WHERE approval_id = ? AND (status = 'pending' OR (status = 'approved' "
                "AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.run_id = approvals.run_id "
                "AND l.tool_call_id = approvals.tool_call_id "
                # a call id reused from an earlier turn: that turn's row is older
                "AND l.tool_name = approvals.tool_name "
                "AND l.created_at >= approvals.created_at))) "
                f"RETURNING {APPROVAL_COLUMNS}",
                (to_db(at), actor, reason, approval_id),
            )
            if row is None:
                return DecisionOutcome(won=False, record=_require(connection, approval_id))
            record = row_to_approval(row)
            audit.append(
                connection,
                "revoked",
                at=at,
                actor=actor,
                run_id=record.run_id,
                approval_id=approval_id,
                detail={"reason": reason},
            )
            return DecisionOutcome(won=True, record=record)

        return await self._db.transaction(body)

    async def set_approval_message(self, approval_id: str, *, channel: str, ts: str) -> None:
        def body(connection: sqlite3.Connection) -> None:
            rows = fetch_all(
                connection,
                "UPDATE approvals SET slack_channel = ?, slack_ts = ? WHERE approval_id = ? "
                "RETURNING approval_id",
                (channel, ts, approval_id),
            )
            if not rows:
                raise InputError(f"no approval {approval_id!r}")

        await self._db.transaction(body)


def _check_new(new: NewApproval) -> None:
    for name in ("approval_id", "run_id", "tool_call_id", "tool_name", "arguments_digest"):
        if not getattr(new, name):
            raise InputError(f"new approval has an empty {name}")
    if new.required_approvals < 1:
        raise InputError("new approval needs required_approvals >= 1")
    for moment in (new.expires_at, new.remind_at):
        if moment is not None:
            to_db(moment)  # refuses a naive time before anything is written


def _insert_or_get(
    connection: sqlite3.Connection, new: NewApproval, *, at: datetime
) -> ApprovalRecord:
    try:
        row = fetch_one(
            connection,
            "INSERT INTO approvals (approval_id, run_id, tool_call_id, tool_name, "
            "arguments_digest, snapshot, status, requester, created_at, expires_at, "
            "required_approvals, remind_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?) "
            "ON CONFLICT (run_id, tool_call_id) WHERE status <> 'revoked' DO NOTHING "
            f"RETURNING {APPROVAL_COLUMNS}",
            (new.approval_id, new.run_id, new.tool_call_id, new.tool_name,
             new.arguments_digest, new.snapshot, new.requester, to_db(at),
             None if new.expires_at is None else to_db(new.expires_at),
             new.required_approvals,
             None if new.remind_at is None else to_db(new.remind_at)),
        )  # fmt: skip
    except sqlite3.IntegrityError as error:
        raise InputError(
            f"approval {new.approval_id!r} cannot be added: {error} "
            "(unknown run, or the approval id is taken by another call)"
        ) from None
    if row is None:
        existing = fetch_one(
            connection,
            f"SELECT {APPROVAL_COLUMNS} FROM approvals WHERE run_id = ? AND tool_call_id = ? "
            "AND status <> 'revoked'",
            (new.run_id, new.tool_call_id),
        )
        assert existing is not None
        return row_to_approval(existing)
    record = row_to_approval(row)
    audit.append(
        connection,
        "requested",
        at=at,
        actor=new.requester,
        run_id=new.run_id,
        approval_id=new.approval_id,
        detail={
            "tool_name": new.tool_name,
            "tool_call_id": new.tool_call_id,
            "arguments_digest": new.arguments_digest,
            "expires_at": None if new.expires_at is None else to_db(new.expires_at),
            "required_approvals": new.required_approvals,
        },
    )
    return record


def _require(connection: sqlite3.Connection, approval_id: str) -> ApprovalRecord:
    row = fetch_one(connection, SELECT_ONE, (approval_id,))
    if row is None:
        raise InputError(f"no approval {approval_id!r}")
    return row_to_approval(row)


def _lost(connection: sqlite3.Connection, approval_id: str, at: datetime) -> ApprovalRecord:
    """The decision did not apply: expire it if that is why, else report the winner."""
    expired = fetch_one(connection, EXPIRE_ONE, (approval_id, to_db(at)))
    if expired is None:
        return _require(connection, approval_id)
    record = row_to_approval(expired)
    audit_expired(connection, record, at)
    return record


def audit_expired(connection: sqlite3.Connection, record: ApprovalRecord, at: datetime) -> None:
    audit.append(
        connection,
        "expired",
        at=at,
        actor="store",
        run_id=record.run_id,
        approval_id=record.approval_id,
        detail={"expires_at": None if record.expires_at is None else to_db(record.expires_at)},
    )
