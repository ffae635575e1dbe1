"""Escalation steps: who else may decide an approval nobody decided in time, and when.

The steps are written with the approval, in its request's transaction (`plan`), each
sealed (store.seals: the approval, the step, its time and its people), so the steps are
fixed when the call is requested, as its quorum and expiry are. Every read says what a
step's seal showed (`Escalation.seal`): only a valid one widens who may decide.

`fire_escalations` is the sweeper's: it takes the due steps in batches `FOR UPDATE SKIP
LOCKED` (another replica's sweep, or a decision being recorded, holds them: they are
left to it), and marks each fired once: `escalated` (audited) while its approval is
pending, `skipped` once it has closed, so that no one is told of a call already decided.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from bot.clock import Clock
from store.records import Escalation, EscalationPlan, FiredEscalation
from store.rows import APPROVAL_COLUMNS, Row, from_db, from_db_optional, to_db
from store.seals import (
    ESCALATION_PURPOSE,
    SEAL_COLUMNS,
    DecisionSeals,
    Seal,
    escalation_fields,
    escalation_row_fields,
    read_approval,
    seal_params,
    stored_seal,
)
from store.sql import audit
from store.tx import Body, Database, many, one, run

COLUMNS = "approval_id, step, due_at, approvers, fired_at, outcome"
SELECTED = f"{COLUMNS}, {SEAL_COLUMNS}"
SWEEP_BATCH = 100
DUE = (
    "SELECT e.approval_id, e.step FROM approval_escalations e "
    "JOIN approvals a ON a.approval_id = e.approval_id "
    "WHERE e.fired_at IS NULL AND e.due_at <= ? {status} "
    "ORDER BY e.due_at, e.approval_id, e.step LIMIT ? FOR UPDATE SKIP LOCKED"
)


def seal_plan(seals: DecisionSeals, approval_id: str, plan: EscalationPlan) -> Seal:
    """The seal of a step about to be written with its approval."""
    return seals.seal(
        ESCALATION_PURPOSE,
        escalation_fields(
            approval_id=approval_id,
            step=plan.step,
            due_at=to_db(plan.due_at),
            approvers=" ".join(plan.approvers),
        ),
    )


def plan(approval_id: str, steps: list[tuple[EscalationPlan, Seal]]) -> Body[None]:
    """Write a new approval's escalation steps (inside its request's transaction)."""
    for step, seal in steps:
        yield run(
            f"INSERT INTO approval_escalations ({SELECTED}) VALUES (?, ?, ?, ?, NULL, NULL, ?, ?) "
            "ON CONFLICT (approval_id, step) DO NOTHING",
            (approval_id, step.step, to_db(step.due_at), " ".join(step.approvers),
             *seal_params(seal)),
        )  # fmt: skip


class Escalations:
    """The EscalationStore."""

    def __init__(self, database: Database, clock: Clock, seals: DecisionSeals) -> None:
        self._db = database
        self._clock = clock
        self._seals = seals

    async def escalations(self, approval_id: str) -> list[Escalation]:
        rows = await self._db.read(
            f"SELECT {SELECTED} FROM approval_escalations WHERE approval_id = ? ORDER BY step",
            (approval_id,),
        )
        return [self._checked(row) for row in rows]

    async def fire_escalations(
        self, *, now: datetime, batch: int = SWEEP_BATCH
    ) -> list[FiredEscalation]:
        at = to_db(now)

        def body() -> Body[list[FiredEscalation]]:
            yield run(  # due steps of closed approvals: never told, never again looked at
                "UPDATE approval_escalations SET fired_at = ?, outcome = 'skipped' "
                "WHERE (approval_id, step) IN ("
                + DUE.format(status="AND a.status <> 'pending'")
                + ")",
                (at, at, batch),
            )
            rows = yield many(DUE.format(status="AND a.status = 'pending'"), (at, batch))
            fired: list[FiredEscalation] = []
            for row in rows:
                fired.append((yield from self._fire(row["approval_id"], int(row["step"]), now)))
            return fired

        taken: list[FiredEscalation] = []
        while True:
            got = await self._db.transact(body)
            taken += got
            if len(got) < batch:
                return taken

    def _fire(self, approval_id: str, step: int, now: datetime) -> Body[FiredEscalation]:
        row = yield one(
            "UPDATE approval_escalations SET fired_at = ?, outcome = 'escalated' "
            f"WHERE approval_id = ? AND step = ? RETURNING {SELECTED}",
            (to_db(now), approval_id, step),
        )
        approval_row = yield one(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals WHERE approval_id = ?", (approval_id,)
        )
        assert row is not None
        assert approval_row is not None
        escalation = self._checked(row)
        approval = read_approval(self._seals, approval_row)
        yield from audit.append(
            "escalated",
            at=now,
            actor="store",
            run_id=approval.run_id,
            approval_id=approval_id,
            detail={"step": step, "to": list(escalation.approvers), "seal": escalation.seal},
        )
        return FiredEscalation(approval=approval, escalation=escalation)

    def _checked(self, row: Row) -> Escalation:
        seal = self._seals.check(
            ESCALATION_PURPOSE,
            escalation_row_fields(row),
            stored_seal(row["seal_key_id"], row["seal"]),
        )
        return replace(_record(row), seal=seal)


def _record(row: Row) -> Escalation:
    return Escalation(
        approval_id=row["approval_id"],
        step=int(row["step"]),
        due_at=from_db(row["due_at"]),
        approvers=tuple(row["approvers"].split()),
        fired_at=from_db_optional(row["fired_at"]),
        outcome=row["outcome"],
    )
