"""Cancelling a run: one write transaction, a compare-and-set on its version.

The run moves to `cancelled` only from the version the caller read and only while it is
not finished, so a run that another worker saved meanwhile (a resume that got further)
is not cancelled blind: the caller reads it again and decides. In the same transaction
its open approvals close (`revoked`, with the cancel's reason: nothing of the run runs
any more) and its standing decisions end; the audit gets one `cancelled` event and a
`revoked` event per approval, so the trail says why each card closed.
"""

from __future__ import annotations

from bot.clock import Clock
from bot.errors import InputError
from store.audit import with_via
from store.records import ApprovalRecord, CancelOutcome, RunRecord, StandingDecision
from store.rows import (
    APPROVAL_COLUMNS,
    RUN_COLUMNS,
    STANDING_COLUMNS,
    row_to_run,
    row_to_standing,
    to_db,
)
from store.seals import DecisionSeals, read_approval
from store.sql import audit
from store.sql.approvals import REVOCABLE
from store.sql.leases import end_lease
from store.tx import Body, Database, many, one

CANCELLABLE_STATUSES: frozenset[str] = frozenset({"running", "paused", "resuming"})
_CANCELLABLE = ", ".join(f"'{status}'" for status in sorted(CANCELLABLE_STATUSES))


def check_cancel(*, actor: str, reason: str) -> None:
    if not actor.strip():
        raise InputError("a cancellation needs the actor's id")
    if not reason.strip():
        raise InputError("say why the run is cancelled")


def cancel_reason(reason: str) -> str:
    """How a closed approval records why (its `revoke_reason`)."""
    return f"run cancelled: {reason}"


class Cancel:
    """`cancel_run` (part of the RunStore)."""

    def __init__(self, database: Database, clock: Clock, seals: DecisionSeals) -> None:
        self._seals = seals
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

        def body() -> Body[CancelOutcome]:
            before = yield from _require_run(run_id)
            row = yield one(
                "UPDATE runs SET status = 'cancelled', version = version + 1, updated_at = ? "
                f"WHERE run_id = ? AND version = ? AND status IN ({_CANCELLABLE}) "
                f"RETURNING {RUN_COLUMNS}",
                (at_text, run_id, expected_version),
            )
            if row is None:
                return CancelOutcome(won=False, run=before)
            yield from end_lease(run_id)  # a worker still on the run writes nothing more
            closed = yield from _close_approvals(
                self._seals, run_id, actor, cancel_reason(why), at_text
            )
            standing = yield from _end_standing(run_id, actor, cancel_reason(why), at_text)
            for record in closed:
                yield from audit.append(
                    "revoked",
                    at=at,
                    actor=actor,
                    run_id=run_id,
                    approval_id=record.approval_id,
                    detail=with_via({"reason": record.revoke_reason}, via),
                )
            yield from audit.append(
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

        return await self._db.transact(body)


def _require_run(run_id: str) -> Body[RunRecord]:
    row = yield one(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ? FOR UPDATE", (run_id,))
    if row is None:
        raise InputError(f"there is no run with id {run_id!r}")
    return row_to_run(row)


def _close_approvals(
    seals: DecisionSeals, run_id: str, actor: str, reason: str, at: str
) -> Body[list[ApprovalRecord]]:
    rows = yield many(
        "UPDATE approvals SET status = 'revoked', revoked_at = ?, revoked_by = ?, "
        f"revoke_reason = ? WHERE run_id = ? AND {REVOCABLE} RETURNING {APPROVAL_COLUMNS}",
        (at, actor, reason, run_id),
    )
    return sorted(
        (read_approval(seals, row) for row in rows), key=lambda r: (r.created_at, r.approval_id)
    )


def _end_standing(run_id: str, actor: str, reason: str, at: str) -> Body[list[StandingDecision]]:
    rows = yield many(
        "UPDATE standing_decisions SET revoked_at = ?, revoked_by = ?, revoke_reason = ? "
        f"WHERE run_id = ? AND revoked_at IS NULL RETURNING {STANDING_COLUMNS}",
        (at, actor, reason, run_id),
    )
    return sorted((row_to_standing(row) for row in rows), key=lambda s: s.created_at)
