"""Direct-message copies of review cards: planned, sent once, then kept up to date.

A copy is planned before it is sent (`plan_copies`: one row per approval and person, so
nobody gets two copies of one card, whichever replica plans them), and the planner holds
it until `claimed_until`. Once posted, its message is recorded (`copy_posted`) so that a
decision updates every copy. A copy whose sender died or failed is claimed again by a
sweep (`claim_unsent_copies`, `FOR UPDATE SKIP LOCKED` as the other sweeps) once its
claim ran out, while its approval is pending and up to a number of attempts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.clock import Clock
from bot.errors import InputError
from store.records import ApprovalCopy, NewCopy
from store.rows import Row, from_db, from_db_optional, to_db
from store.tx import Body, Database, many, one

COLUMNS = (
    "approval_id, recipient, stands_in_for, step, planned_at, attempts, channel, ts, posted_at"
)
SWEEP_BATCH = 100
UNSENT = (
    "SELECT c.approval_id, c.recipient FROM approval_copies c "
    "JOIN approvals a ON a.approval_id = c.approval_id "
    "WHERE c.ts IS NULL AND (c.claimed_until IS NULL OR c.claimed_until <= ?) "
    "AND c.attempts < ? AND a.status = 'pending' "
    "ORDER BY c.planned_at, c.approval_id, c.recipient LIMIT ? FOR UPDATE SKIP LOCKED"
)


class Copies:
    """The CopyStore."""

    def __init__(self, database: Database, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    async def plan_copies(
        self, approval_id: str, copies: Sequence[NewCopy], *, claim_until: datetime
    ) -> list[ApprovalCopy]:
        at = to_db(self._clock())

        def body() -> Body[list[ApprovalCopy]]:
            planned: list[ApprovalCopy] = []
            for copy in copies:
                row = yield one(
                    f"INSERT INTO approval_copies ({COLUMNS}, claimed_until) "
                    "VALUES (?, ?, ?, ?, ?, 1, NULL, NULL, NULL, ?) "
                    f"ON CONFLICT (approval_id, recipient) DO NOTHING RETURNING {COLUMNS}",
                    (approval_id, copy.recipient, copy.stands_in_for, copy.step, at,
                     to_db(claim_until)),
                )  # fmt: skip
                if row is not None:
                    planned.append(_record(row))
            return planned

        if not copies:
            return []
        return await self._db.transact(body)

    async def copy_posted(self, approval_id: str, recipient: str, *, channel: str, ts: str) -> None:
        at = to_db(self._clock())

        def body() -> Body[None]:
            row = yield one(
                "UPDATE approval_copies SET channel = ?, ts = ?, posted_at = ?, "
                "claimed_until = NULL WHERE approval_id = ? AND recipient = ? "
                "RETURNING approval_id",
                (channel, ts, at, approval_id, recipient),
            )
            if row is None:
                raise InputError(f"no copy of approval {approval_id!r} for {recipient!r}")

        await self._db.transact(body)

    async def claim_unsent_copies(
        self,
        *,
        now: datetime,
        claim_until: datetime,
        max_attempts: int,
        batch: int = SWEEP_BATCH,
    ) -> list[ApprovalCopy]:
        at = to_db(now)

        def body() -> Body[list[ApprovalCopy]]:
            rows = yield many(
                "UPDATE approval_copies SET claimed_until = ?, attempts = attempts + 1 "
                f"WHERE (approval_id, recipient) IN ({UNSENT}) RETURNING {COLUMNS}",
                (to_db(claim_until), at, max_attempts, batch),
            )
            claimed = (_record(row) for row in rows)
            return sorted(claimed, key=lambda c: (c.planned_at, c.approval_id, c.recipient))

        return await self._db.transact(body)

    async def approval_copies(self, approval_id: str) -> list[ApprovalCopy]:
        rows = await self._db.read(
            f"SELECT {COLUMNS} FROM approval_copies WHERE approval_id = ? "
            "ORDER BY planned_at, recipient",
            (approval_id,),
        )
        return [_record(row) for row in rows]


def _record(row: Row) -> ApprovalCopy:
    return ApprovalCopy(
        approval_id=row["approval_id"],
        recipient=row["recipient"],
        stands_in_for=row["stands_in_for"],
        step=int(row["step"]),
        planned_at=from_db(row["planned_at"]),
        attempts=int(row["attempts"]),
        channel=row["channel"],
        ts=row["ts"],
        posted_at=from_db_optional(row["posted_at"]),
    )
