"""The SQLite database of the store: one writer thread behind an asyncio.Lock, one
reader thread.

Writes: one sqlite3 connection that lives on its own thread (store.sqlite.thread). A
write transaction is a plain function run there whole (`BEGIN IMMEDIATE`, the
statements, `COMMIT`, or `ROLLBACK` on any error), so it costs one hand-off between the
event loop and the thread instead of one per statement: measured by
bench/store_decisions.py, per-statement awaits made a decision (5 statements) 2.7x slower
than the raw compare-and-set it wraps. Once started a transaction cannot be cut in half by
a cancelled caller: the thread finishes it, and `close()` waits for it. `BEGIN IMMEDIATE`
takes the database's write lock up front (other processes wait up to `busy_timeout`), so
no transaction fails half-way on a lock upgrade. Write transactions that arrive while the
writer is busy are committed together (store.sqlite.group_commit).

Reads: a second connection with `query_only` on its own thread; with WAL, readers never
block the writer and see the last commit. How both are opened, and what
`synchronous` costs and buys: store.sqlite.opening; the shared SQL as SQLite runs it:
store.sqlite.statements.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from bot.errors import StoreError
from store.sqlite.group_commit import Write, commit_group, take_group
from store.sqlite.opening import DEFAULT_BUSY_TIMEOUT_MS, Synchronous, open_reader, open_writer
from store.sqlite.statements import drive, sqlite_sql
from store.sqlite.thread import ConnectionThread
from store.tx import Body, Statement, single

Params = Sequence[Any]
T = TypeVar("T")


class Database:
    """A SQLite file opened for the store: `transaction()` writes and `read()` queries."""

    def __init__(
        self,
        path: Path,
        *,
        thread: ConnectionThread,
        writer: sqlite3.Connection,
        reader_thread: ConnectionThread,
        reader: sqlite3.Connection,
    ) -> None:
        self.path = path
        self._thread = thread
        self._writer = writer
        self._reader_thread = reader_thread
        self._reader = reader
        self._lock = asyncio.Lock()  # one group forms at a time (the thread runs them in turn)
        self._queued: list[Write[Any]] = []

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        synchronous: Synchronous = "FULL",
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> Database:
        thread = ConnectionThread(name=f"approvals-store-writer:{path.name}")
        try:
            writer = await thread.run(lambda: open_writer(path, synchronous, busy_timeout_ms))
        except BaseException:
            await thread.stop()
            raise
        reader_thread = ConnectionThread(name=f"approvals-store-reader:{path.name}")
        try:
            reader = await reader_thread.run(
                lambda: open_reader(path, synchronous, busy_timeout_ms)
            )
        except BaseException:
            await reader_thread.stop()
            await thread.run(writer.close)
            await thread.stop()
            raise
        return cls(path, thread=thread, writer=writer, reader_thread=reader_thread, reader=reader)

    @property
    def waiting_writes(self) -> int:
        """Write transactions queued and not yet taken into a group."""
        return len(self._queued)

    async def transact(self, body: Callable[[], Body[T]]) -> T:
        """Run the transaction body made by `body()` (store.tx) whole on the writer thread,
        inside BEGIN IMMEDIATE ... COMMIT (with the bodies queued beside it:
        store.sqlite.group_commit)."""
        return await self._write(lambda connection: drive(body(), connection), alone=False)

    async def transact_one(self, statement: Statement) -> Any:
        """One statement as its own transaction (the same one hand-off as any other)."""
        return await self.transact(single(statement))

    async def transaction(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run `body(connection)` on the writer thread inside BEGIN IMMEDIATE ... COMMIT,
        in a transaction of its own.

        Any exception rolls the whole transaction back and propagates; sqlite3 errors
        become StoreError. `body` must not touch the event loop (it runs on the thread).
        """
        return await self._write(body, alone=True)

    async def _write(self, work: Callable[[sqlite3.Connection], T], *, alone: bool) -> T:
        """Queue `work`; when it is this caller's turn at the writer and no group took it
        yet, run a group that starts with it. A caller cancelled before its work was taken
        leaves nothing behind; once taken, the thread finishes it (its answer is dropped)."""
        loop = asyncio.get_running_loop()
        job: Write[T] = Write(work=work, future=loop.create_future(), alone=alone)
        self._queued.append(job)
        try:
            async with self._lock:
                if not job.taken:
                    await self._run_on_thread(take_group(self._queued), loop)
            return await job.future
        except asyncio.CancelledError:
            if not job.taken:
                self._queued.remove(job)
            job.future.cancel()
            raise

    async def _run_on_thread(
        self, group: list[Write[Any]], loop: asyncio.AbstractEventLoop
    ) -> None:
        """Hand `group` to the writer thread. When the thread cannot take it (stopped),
        every caller in it gets that error rather than waiting forever."""
        try:
            await self._thread.run(partial(commit_group, self._writer, self.path, group, loop))
        except asyncio.CancelledError:
            raise  # this caller stopped waiting; the thread still answers the group
        except BaseException as error:
            for job in group:
                if not job.future.done():
                    job.future.set_exception(error)

    async def read(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        """Rows of one query on the reader (its own snapshot of the last commit); a
        sqlite3 error (an I/O error, say) becomes StoreError, as for writes."""
        return await self._reader_thread.run(lambda: self._query(sql, params))

    def _query(self, sql: str, params: Params) -> list[sqlite3.Row]:
        try:
            return self._reader.execute(sqlite_sql(sql), params).fetchall()
        except sqlite3.Error as error:
            raise StoreError(f"read failed on {self.path}: {error}") from error

    async def read_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        rows = await self.read(sql, params)
        return rows[0] if rows else None

    async def close(self) -> None:
        """Close the reader; finish queued write transactions, then close the writer."""
        try:
            try:
                await self._reader_thread.run(self._reader.close)
            finally:
                await self._reader_thread.stop()
        finally:
            try:
                await self._thread.run(self._writer.close)
            finally:
                await self._thread.stop()
