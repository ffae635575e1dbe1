"""Standing decisions: a decided approval made to stand for the rest of its run.

At most one standing decision is active per run and tool (a partial unique index); a new
one for the same tool ends the old one in the same transaction (`superseded`). Each
change is audited in its own transaction: `standing_set`, `standing_revoked`. Each is
sealed when set (store.seals: run, tool, verdict, decider), and every read says what its
seal showed (`StandingDecision.seal`): only a valid one may decide a call.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from bot.clock import Clock
from bot.errors import InputError
from store.audit import with_via
from store.records import FINISHED_RUN_STATUSES, StandingDecision
from store.rows import STANDING_COLUMNS, Row, row_to_standing, to_db
from store.seals import (
    SEAL_COLUMNS,
    STANDING_PURPOSE,
    DecisionSeals,
    check_standing_row,
    read_approval,
    seal_params,
    standing_fields,
)
from store.sql import audit
from store.sql.approvals import SELECT_ONE
from store.tx import Body, Database, one

SUPERSEDED = "superseded by a newer standing decision"
SELECTED = f"{STANDING_COLUMNS}, {SEAL_COLUMNS}"


class Standing:
    """The StandingStore."""

    def __init__(self, database: Database, clock: Clock, seals: DecisionSeals) -> None:
        self._db = database
        self._clock = clock
        self._seals = seals

    async def add_standing_decision(
        self, approval_id: str, *, via: str | None = None
    ) -> StandingDecision:
        at = self._clock()

        def body() -> Body[StandingDecision]:
            found = yield one(SELECT_ONE, (approval_id,))
            if found is None:
                raise InputError(f"there is no approval with id {approval_id!r}")
            approval = read_approval(self._seals, found)
            if approval.status not in ("approved", "rejected") or approval.decider is None:
                raise InputError(
                    f"approval {approval_id} is {approval.status}; only a decided one can stand"
                )
            run = yield one(  # locked: one standing decision at a time per run
                "SELECT status FROM runs WHERE run_id = ? FOR UPDATE", (approval.run_id,)
            )
            if run is None or run["status"] in FINISHED_RUN_STATUSES:
                raise InputError(f"run {approval.run_id} has finished; nothing more to decide")
            existing = yield one(
                f"SELECT {SELECTED} FROM standing_decisions WHERE approval_id = ?",
                (approval_id,),
            )
            if existing is not None:
                return self._checked(existing)
            ended = yield one(
                "UPDATE standing_decisions SET revoked_at = ?, revoked_by = ?, revoke_reason = ? "
                "WHERE run_id = ? AND tool_name = ? AND revoked_at IS NULL "
                f"RETURNING {STANDING_COLUMNS}",
                (to_db(at), approval.decider, SUPERSEDED, approval.run_id, approval.tool_name),
            )
            if ended is not None:
                yield from _audit("standing_revoked", row_to_standing(ended), at, via=via,
                       actor=approval.decider, detail={"reason": SUPERSEDED})  # fmt: skip
            seal = self._seals.seal(
                STANDING_PURPOSE,
                standing_fields(
                    approval_id=approval.approval_id,
                    run_id=approval.run_id,
                    tool_name=approval.tool_name,
                    decision=approval.status,
                    decider=approval.decider,
                    message=approval.message,
                    created_at=to_db(at),
                ),
            )
            row = yield one(
                f"INSERT INTO standing_decisions ({STANDING_COLUMNS}, {SEAL_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?) "
                f"RETURNING {SELECTED}",
                (approval.approval_id, approval.run_id, approval.tool_name, approval.status,
                 approval.decider, approval.reason, approval.message, to_db(at),
                 *seal_params(seal)),
            )  # fmt: skip
            assert row is not None
            decision = self._checked(row)
            yield from _audit("standing_set", decision, at, via=via, actor=decision.decider,
                   detail={"decision": decision.decision, "reason": decision.reason})  # fmt: skip
            return decision

        return await self._db.transact(body)

    async def standing_decisions(
        self, run_id: str, *, active_only: bool = True
    ) -> list[StandingDecision]:
        active = " AND revoked_at IS NULL" if active_only else ""
        rows = await self._db.read(
            f"SELECT {SELECTED} FROM standing_decisions WHERE run_id = ?{active} "
            "ORDER BY created_at, approval_id",
            (run_id,),
        )
        return [self._checked(row) for row in rows]

    async def get_standing_decision(self, approval_id: str) -> StandingDecision | None:
        row = await self._db.read_one(
            f"SELECT {SELECTED} FROM standing_decisions WHERE approval_id = ?",
            (approval_id,),
        )
        return None if row is None else self._checked(row)

    async def revoke_standing_decision(
        self, approval_id: str, *, actor: str, reason: str, via: str | None = None
    ) -> StandingDecision | None:
        if not actor.strip():
            raise InputError("a revocation needs the actor's id")
        at = self._clock()

        def body() -> Body[StandingDecision | None]:
            row = yield one(
                "UPDATE standing_decisions SET revoked_at = ?, revoked_by = ?, revoke_reason = ? "
                "WHERE approval_id = ? AND revoked_at IS NULL "
                f"RETURNING {SELECTED}",
                (to_db(at), actor, reason, approval_id),
            )
            if row is None:
                return None
            decision = self._checked(row)
            yield from _audit("standing_revoked", decision, at, via=via, actor=actor,
                   detail={"reason": reason})  # fmt: skip
            return decision

        return await self._db.transact(body)

    def _checked(self, row: Row) -> StandingDecision:
        """The row (read with its seal columns) as a decision, saying what its seal showed."""
        return replace(row_to_standing(row), seal=check_standing_row(self._seals, row))


def _audit(
    kind: str,
    decision: StandingDecision,
    at: datetime,
    *,
    via: str | None,
    actor: str,
    detail: dict[str, object],
) -> Body[None]:
    yield from audit.append(
        kind,
        at=at,
        actor=actor,
        run_id=decision.run_id,
        approval_id=decision.approval_id,
        detail=with_via({"tool": decision.tool_name, **detail}, via),
    )
