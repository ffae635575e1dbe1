"""When queued audit events are linked into the chain (store.sql.audit): each backend's
database wrapped with its linking rule. Both implement the Database the concept parts
write through, and `settle()`, which every read of the log awaits first.

- `LinkAtCommit` (SQLite): the one writer is the chain's sequencer. Every write
  transaction ends by linking what it queued, inside the same transaction, so the queue
  is empty between transactions and `settle()` has nothing to do.
- `Sequencer` (Postgres): writers commit without touching the chain's head; a task of
  each process links behind them, woken by its own commits and, every `idle_seconds`,
  for events another process queued and did not link (it died between its commit and
  its link). It links at most every `PACE_SECONDS`, so under load a pass takes a batch
  (a pass costs the same six round trips for one event or five hundred). Linkers of
  several processes take turns on the head row. The task belongs to the store (its
  TaskOwner): started when it opens, stopped (and the queue linked) when it closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from bot.errors import ApprovalsError, StoreError
from bot.tasks import TaskOwner
from store.sql.audit import InsertLinked, insert_values, link_all, link_queued
from store.tx import Body, Database, Statement, single

T = TypeVar("T")
IDLE_SECONDS = 2.0
PACE_SECONDS = 0.05  # at most 20 link passes a second: under load each takes a batch
RETRY_SECONDS = 1.0
log = logging.getLogger("approvals.store")
ANY_QUEUED = "SELECT 1 FROM audit_queue ORDER BY id LIMIT 1"
"""By the primary key: a scan of the table would read every page the linked (deleted)
events left behind until a vacuum, on every pass."""


class LinkAtCommit:
    """`database` with every write transaction ending in the link of what it queued."""

    def __init__(self, database: Database) -> None:
        self._db = database

    async def transact(self, body: Callable[[], Body[T]]) -> T:
        def then_link() -> Body[T]:
            outcome = yield from body()
            yield from link_queued()
            return outcome

        return await self._db.transact(then_link)

    async def transact_one(self, statement: Statement) -> Any:
        return await self.transact(single(statement))

    async def read(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any]:
        return await self._db.read(sql, params)

    async def read_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return await self._db.read_one(sql, params)

    async def settle(self) -> None:
        """Nothing is ever left queued between transactions."""


class Sequencer:
    """`database` with a task that links the audit queue behind the writers."""

    def __init__(
        self,
        database: Database,
        *,
        idle_seconds: float = IDLE_SECONDS,
        insert: InsertLinked = insert_values,
    ) -> None:
        self._db = database
        self._insert = insert  # the backend's INSERT of linked events (store.sql.audit)
        self._idle_seconds = idle_seconds
        self._wanted = asyncio.Event()
        self._linking = asyncio.Lock()  # one link pass of this process at a time
        self._tasks = TaskOwner(logger=log)

    def start(self) -> None:
        self._tasks.spawn(self._link_forever(), name="audit-sequencer")

    async def close(self) -> None:
        """Stop the task, then link what is still queued (a last try: what fails stays
        queued for another process or the next start)."""
        await self._tasks.aclose()
        with contextlib.suppress(StoreError):
            await self.settle()

    async def transact(self, body: Callable[[], Body[T]]) -> T:
        try:
            return await self._db.transact(body)
        finally:
            self._wanted.set()

    async def transact_one(self, statement: Statement) -> Any:
        try:
            return await self._db.transact_one(statement)
        finally:
            self._wanted.set()

    async def read(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any]:
        return await self._db.read(sql, params)

    async def read_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return await self._db.read_one(sql, params)

    async def settle(self) -> None:
        """Link everything queued so far (by any process). When it returns, this process
        holds no lock on the chain, and takes none until something more is queued."""
        async with self._linking:
            if await self._db.read_one(ANY_QUEUED) is not None:
                await link_all(self._db, self._insert)

    async def _link_forever(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._idle_seconds):
                    await self._wanted.wait()
            self._wanted.clear()
            try:
                await self.settle()
            except ApprovalsError as error:  # the database failing, or its head row gone
                log.warning("audit events stay queued: %s", error)
                await asyncio.sleep(RETRY_SECONDS)  # the database is failing: pace retries
            else:
                await asyncio.sleep(PACE_SECONDS)  # let the queue gather a batch
