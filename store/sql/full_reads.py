"""Who has read an approval's arguments in full (`approval_full_reads`): a call its card
cuts counts an approval only from someone who read it whole, for its current digest."""

from __future__ import annotations

from bot.clock import Clock
from bot.errors import InputError
from store.rows import to_db
from store.sql import audit
from store.sql.approvals import SELECT_ONE
from store.tx import Body, Database, one


class FullReads:
    """The full-read part of the VoteStore."""

    def __init__(self, database: Database, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    async def record_full_read(self, approval_id: str, *, reader: str, digest: str) -> bool:
        at = self._clock()

        def body() -> Body[bool]:
            row = yield one(SELECT_ONE, (approval_id,))
            if row is None:
                raise InputError(f"there is no approval with id {approval_id!r}")
            inserted = yield one(
                "INSERT INTO approval_full_reads (approval_id, reader, digest, at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING reader",
                (approval_id, reader, digest, to_db(at)),
            )
            if inserted is None:
                return False
            yield from audit.append(
                "read_in_full",
                at=at,
                actor=reader,
                run_id=row["run_id"],
                approval_id=approval_id,
                detail={"digest": digest},
            )
            return True

        return await self._db.transact(body)

    async def has_read_in_full(self, approval_id: str, *, reader: str, digest: str) -> bool:
        row = await self._db.read_one(
            "SELECT 1 FROM approval_full_reads WHERE approval_id = ? AND reader = ? AND digest = ?",
            (approval_id, reader, digest),
        )
        return row is not None
