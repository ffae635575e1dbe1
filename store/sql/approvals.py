"""Approvals: every transition is one conditional UPDATE from the expected state.

`decide` moves pending -> approved|rejected only while the approval is unexpired; of two
racing deciders exactly one UPDATE matches, and the other reads back the winner's row.
Expiry, revocation and reminders are conditional updates too, and a trigger keeps
decided approvals decided (the one exit: approved -> revoked before the call executes).
The audit event for a transition is written in the same transaction as the transition.

The sweeps (`expire_due`, `claim_reminders`) take their rows in batches of at most
`batch`, one transaction each, until a batch comes back short: each batch claims its
rows `FOR UPDATE SKIP LOCKED`, so a second sweeper (another replica) skips the rows
another transaction holds instead of waiting for them, and the conditional update on
the claimed rows stays the last line of defence.

The people-facing lists are store.sql.approval_lists.

Each operation refuses bad input by name (store.sql.approval_checks) before it writes
anything. What lapses (the sweeps' SQL, expiring one approval) is store.sql.expiry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from bot.clock import Clock
from bot.errors import InputError
from store.audit import with_via
from store.records import (
    LEGACY_KEY_PREFIX,
    ApprovalRecord,
    ApprovalStatus,
    DecisionOutcome,
    NewApproval,
    RunRecord,
    Verdict,
)
from store.rows import (
    APPROVAL_AND_RUN_COLUMNS,
    APPROVAL_COLUMNS,
    VOTE_COLUMNS,
    run_beside,
    to_db,
    to_db_optional,
    where_all,
)
from store.seals import (
    REQUEST_PURPOSE,
    SEAL_COLUMNS,
    SNAPSHOT_SEAL_COLUMNS,
    VOTE_PURPOSE,
    DecisionSeals,
    Seal,
    decider_vote,
    fields_of_vote,
    new_request_fields,
    read_approval,
    seal_params,
    seal_snapshot,
)
from store.sql import audit, escalations
from store.sql.approval_checks import (
    check_batch,
    check_decision,
    check_new,
    check_revocation,
    check_status,
)
from store.sql.expiry import CLAIM_REMINDERS, EXPIRE_DUE, SWEEP_BATCH, audit_expired, expire_one
from store.tx import Body, Database, IntegrityViolation, many, one, run

SELECT_ONE = f"SELECT {APPROVAL_COLUMNS} FROM approvals WHERE approval_id = ?"
SELECT_WITH_RUN = (
    f"SELECT {APPROVAL_AND_RUN_COLUMNS} FROM approvals a "
    "LEFT JOIN runs r ON r.run_id = a.run_id WHERE a.approval_id = ?"
)
REVOCABLE = (
    "(status = 'pending' OR (status = 'approved' "
    "AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.execution_key = approvals.execution_key) "
    f"AND NOT (approvals.execution_key LIKE '{LEGACY_KEY_PREFIX}%' "
    "AND EXISTS (SELECT 1 FROM ledger l WHERE l.run_id = approvals.run_id "
    "AND l.tool_call_id = approvals.tool_call_id "
    # a call id reused from an earlier turn: that turn's row is older
    "AND l.tool_name = approvals.tool_name "
    "AND l.created_at >= approvals.created_at))))"
)
"""An approval that may still be revoked: pending, or approved while its call has not
started (no ledger row for its execution key; for an approval from before keys were
stored, none for its tool call id from its turn)."""


class Approvals:
    """The ApprovalStore."""

    def __init__(self, database: Database, clock: Clock, seals: DecisionSeals) -> None:
        self._db = database
        self._clock = clock
        self._seals = seals

    async def add_approvals(self, approvals: Sequence[NewApproval]) -> list[ApprovalRecord]:
        at = self._clock()
        for new in approvals:
            check_new(new)
        sealed = [
            (new, self._seals.seal(REQUEST_PURPOSE, new_request_fields(new, at)))
            for new in approvals
        ]
        snapshot_seals = {
            new.approval_id: seal_snapshot(
                self._seals, approval_id=new.approval_id,
                arguments_digest=new.arguments_digest, snapshot=new.snapshot,
            )
            for new in approvals
        }  # fmt: skip
        steps = {
            new.approval_id: [
                (step, escalations.seal_plan(self._seals, new.approval_id, step))
                for step in new.escalations
            ]
            for new in approvals
        }

        def body() -> Body[list[ApprovalRecord]]:
            added = []
            for new, seal in sealed:
                record = yield from _insert_or_get(
                    self._seals,
                    new,
                    at=at,
                    seal=seal,
                    snapshot_seal=snapshot_seals[new.approval_id],
                )
                if record.approval_id == new.approval_id and steps[new.approval_id]:
                    yield from escalations.plan(new.approval_id, steps[new.approval_id])
                added.append(record)
            return added

        return await self._db.transact(body)

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        row = await self._db.read_one(SELECT_ONE, (approval_id,))
        return None if row is None else read_approval(self._seals, row)

    async def approval_and_run(
        self, approval_id: str
    ) -> tuple[ApprovalRecord, RunRecord | None] | None:
        row = await self._db.read_one(SELECT_WITH_RUN, (approval_id,))
        return None if row is None else (read_approval(self._seals, row), run_beside(row))

    async def list_approvals(
        self,
        *,
        run_id: str | None = None,
        status: ApprovalStatus | None = None,
        limit: int = 100,
    ) -> list[ApprovalRecord]:
        check_status(status)
        where, params = where_all({"run_id = ?": run_id, "status = ?": status})
        rows = await self._db.read(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals {where} "
            "ORDER BY created_at, approval_id LIMIT ?",
            (*params, limit),
        )
        return [read_approval(self._seals, row) for row in rows]

    async def decide(
        self,
        approval_id: str,
        *,
        decision: Verdict,
        decider: str,
        reason: str | None,
        message: str | None = None,
        now: datetime | None = None,
    ) -> DecisionOutcome:
        check_decision(decision, decider=decider)
        at = now or self._clock()
        at_text = to_db(at)

        def body() -> Body[DecisionOutcome]:
            row = yield one(
                "UPDATE approvals SET status = ?, decider = ?, reason = ?, message = ?, "
                "decided_at = ? WHERE approval_id = ? AND status = 'pending' "
                "AND (expires_at IS NULL OR expires_at > ?) "
                f"RETURNING {APPROVAL_COLUMNS}",
                (decision, decider, reason, message, at_text, approval_id, at_text),
            )
            if row is not None:
                record = read_approval(self._seals, row)
                yield from self._decider_vote(record, at_text)
                yield from audit.append(
                    "decided",
                    at=at,
                    actor=decider,
                    run_id=record.run_id,
                    approval_id=approval_id,
                    detail={"decision": decision, "reason": reason, "message": message},
                )
                return DecisionOutcome(won=True, record=record)
            lost = yield from expire_one(self._seals, approval_id, at)
            if lost is None:
                lost = yield from require_approval(self._seals, approval_id)
            return DecisionOutcome(won=False, record=lost)

        return await self._db.transact(body)

    def _decider_vote(self, record: ApprovalRecord, at: str) -> Body[None]:
        """A decision set outright is recorded as its decider's sealed vote (the check
        before a call runs counts sealed votes only)."""
        assert record.decider is not None
        seal = self._seals.seal(VOTE_PURPOSE, fields_of_vote(record, decider_vote(record, at)))
        yield run(
            f"INSERT INTO approval_votes ({VOTE_COLUMNS}, {SEAL_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (record.approval_id, record.decider, record.status, record.arguments_digest,
             record.reason, at, *seal_params(seal)),
        )  # fmt: skip

    async def expire_due(
        self, *, now: datetime | None = None, batch: int = SWEEP_BATCH
    ) -> list[ApprovalRecord]:
        check_batch(batch)
        at = now or self._clock()

        def body() -> Body[list[ApprovalRecord]]:
            rows = yield many(EXPIRE_DUE, (to_db(at), batch, to_db(at)))
            expired = sorted(
                (read_approval(self._seals, row) for row in rows), key=lambda r: r.approval_id
            )
            for record in expired:
                yield from audit_expired(record, at)
            return expired

        return await self._in_batches(body, batch)

    async def revoke(
        self, approval_id: str, *, actor: str, reason: str | None, via: str | None = None
    ) -> DecisionOutcome:
        check_revocation(actor=actor)
        at = self._clock()

        def body() -> Body[DecisionOutcome]:
            row = yield one(
                "UPDATE approvals SET status = 'revoked', revoked_at = ?, revoked_by = ?, "
                "revoke_reason = ? "
                f"WHERE approval_id = ? AND {REVOCABLE} RETURNING {APPROVAL_COLUMNS}",
                (to_db(at), actor, reason, approval_id),
            )
            if row is None:
                now = yield from require_approval(self._seals, approval_id)
                return DecisionOutcome(won=False, record=now)
            record = read_approval(self._seals, row)
            yield from audit.append(
                "revoked",
                at=at,
                actor=actor,
                run_id=record.run_id,
                approval_id=approval_id,
                detail=with_via({"reason": reason}, via),
            )
            return DecisionOutcome(won=True, record=record)

        return await self._db.transact(body)

    async def set_approval_message(self, approval_id: str, *, channel: str, ts: str) -> None:
        def body() -> Body[None]:
            rows = yield many(
                "UPDATE approvals SET slack_channel = ?, slack_ts = ? WHERE approval_id = ? "
                "RETURNING approval_id",
                (channel, ts, approval_id),
            )
            if not rows:
                raise InputError(f"no approval {approval_id!r}")

        await self._db.transact(body)

    async def claim_reminders(
        self, *, now: datetime, batch: int = SWEEP_BATCH
    ) -> list[ApprovalRecord]:
        check_batch(batch)
        at = to_db(now)

        def body() -> Body[list[ApprovalRecord]]:
            rows = yield many(CLAIM_REMINDERS, (at, at, at, batch, at, at))
            claimed = sorted(
                (read_approval(self._seals, r) for r in rows), key=lambda r: r.approval_id
            )
            for record in claimed:
                yield from audit.append(
                    "reminded",
                    at=now,
                    actor="store",
                    run_id=record.run_id,
                    approval_id=record.approval_id,
                    detail={"expires_at": to_db(record.expires_at) if record.expires_at else None},
                )
            return claimed

        return await self._in_batches(body, batch)

    async def _in_batches(
        self, body: Callable[[], Body[list[ApprovalRecord]]], batch: int
    ) -> list[ApprovalRecord]:
        """Run the sweep's `body` (one batch, one transaction) until a batch comes back
        short of `batch`: nothing is left that another transaction does not hold."""
        taken: list[ApprovalRecord] = []
        while True:
            got = await self._db.transact(body)
            taken += got
            if len(got) < batch:
                return sorted(taken, key=lambda record: record.approval_id)


def _insert_or_get(
    seals: DecisionSeals, new: NewApproval, *, at: datetime, seal: Seal, snapshot_seal: Seal
) -> Body[ApprovalRecord]:
    try:
        row = yield one(
            "INSERT INTO approvals (approval_id, run_id, tool_call_id, tool_name, "
            "arguments_digest, snapshot, status, requester, created_at, expires_at, "
            "required_approvals, remind_at, execution_key, policy_fingerprint, "
            f"{SEAL_COLUMNS}, {SNAPSHOT_SEAL_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (run_id, execution_key) WHERE status <> 'revoked' DO NOTHING "
            f"RETURNING {APPROVAL_COLUMNS}",
            (new.approval_id, new.run_id, new.tool_call_id, new.tool_name,
             new.arguments_digest, new.snapshot, new.requester, to_db(at),
             to_db_optional(new.expires_at), new.required_approvals,
             to_db_optional(new.remind_at), new.key, new.policy_fingerprint,
             *seal_params(seal), *seal_params(snapshot_seal)),
        )  # fmt: skip
    except IntegrityViolation as error:
        raise InputError(
            f"approval {new.approval_id!r} cannot be added: {error} "
            "(unknown run, or the approval id is taken by another call)"
        ) from None
    if row is None:
        existing = yield one(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals WHERE run_id = ? AND execution_key = ? "
            "AND status <> 'revoked'",
            (new.run_id, new.key),
        )
        assert existing is not None
        return read_approval(seals, existing)
    yield from audit.append(
        "requested",
        at=at,
        actor=new.requester,
        run_id=new.run_id,
        approval_id=new.approval_id,
        detail={
            "tool_name": new.tool_name,
            "tool_call_id": new.tool_call_id,
            "execution_key": new.key,
            "arguments_digest": new.arguments_digest,
            "expires_at": to_db_optional(new.expires_at),
            "required_approvals": new.required_approvals,
        },
    )
    return read_approval(seals, row)


def require_approval(seals: DecisionSeals, approval_id: str) -> Body[ApprovalRecord]:
    """The approval as it is now, inside a write transaction; InputError if unknown."""
    row = yield one(SELECT_ONE, (approval_id,))
    if row is None:
        raise InputError(f"no approval {approval_id!r}")
    return read_approval(seals, row)
