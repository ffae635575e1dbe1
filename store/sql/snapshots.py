"""Sealing the review snapshots a database holds from before they were sealed.

Migration 0041 adds each approval's snapshot seal (store.seals, purpose "snapshot"); from
then on the store seals every snapshot it writes. The one open that applies 0041 to a
database that existed (the process holding the keys) seals the snapshots already there,
in one transaction audited `snapshots_sealed`. After that a snapshot without a valid seal
is never shown and its call never decided nor run: nothing seals it later (the migration
is recorded, and applying it again fails on the columns it adds). So the upgrade trusts
the database as the previous build did, as the upgrade to decision seals (0010) does.
"""

from __future__ import annotations

from datetime import datetime

from bot.clock import Clock
from store.seals import DecisionSeals, seal_params, seal_snapshot
from store.sql import audit
from store.tx import Body, Database, many, run

SNAPSHOTS_MIGRATION = "0041_sealed_snapshots"


class SnapshotSealing:
    """`seal_existing`: the one-time sealing after migration 0041."""

    def __init__(self, database: Database, seals: DecisionSeals, clock: Clock) -> None:
        self._db = database
        self._seals = seals
        self._clock = clock

    async def seal_existing(self) -> int:
        """Seal every snapshot that has no seal yet; how many it sealed."""
        at = self._clock()
        return await self._db.transact(lambda: self._body(at))

    def _body(self, at: datetime) -> Body[int]:
        rows = yield many(
            "SELECT approval_id, arguments_digest, snapshot FROM approvals "
            "WHERE snapshot_seal IS NULL ORDER BY approval_id"
        )
        for row in rows:
            seal = seal_snapshot(
                self._seals,
                approval_id=row["approval_id"],
                arguments_digest=row["arguments_digest"],
                snapshot=row["snapshot"],
            )
            yield run(
                "UPDATE approvals SET snapshot_seal_key_id = ?, snapshot_seal = ? "
                "WHERE approval_id = ?",
                (*seal_params(seal), row["approval_id"]),
            )
        yield from audit.append(
            "snapshots_sealed",
            at=at,
            actor="store",
            run_id=None,
            approval_id=None,
            detail={"approvals": len(rows)},
        )
        return len(rows)
