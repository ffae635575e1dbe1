"""The SQLite connections: one writer thread behind an asyncio.Lock, one reader thread.

Writes: one sqlite3 connection that lives on its own thread. A write transaction is a
plain function run there whole (`BEGIN IMMEDIATE`, the statements, `COMMIT`, or
`ROLLBACK` on any error), so it costs one hand-off between the event loop and the thread
instead of one per statement: measured by bench/store_decisions.py, per-statement awaits made a
decision (5 statements) 2.7x slower than the raw compare-and-set it wraps. Once started
a transaction cannot be cut in half by a cancelled caller: the thread finishes it, and
`close()` waits for it. `BEGIN IMMEDIATE` takes the database's write lock up front (other
processes wait up to `busy_timeout`), so no transaction fails half-way on a lock upgrade.

Reads: a second connection with `query_only` on its own thread; with WAL, readers never
block the writer and see the last commit.

Each connection lives on a `ConnectionThread` that runs submitted functions one at a
time: a lean hand-off (a SimpleQueue in, `call_soon_threadsafe` back) instead of a
ThreadPoolExecutor. Measured here, run_in_executor costs ~105 us per round trip against
~65 us for this path (the same mechanism aiosqlite uses), and every write transaction
pays one round trip.

`synchronous=FULL` (the default) fsyncs the WAL on every commit: a decision that was
acknowledged to Slack survives power loss. `NORMAL` (APPROVALS_SQLITE_SYNCHRONOUS=NORMAL)
fsyncs only at checkpoints: still safe against a process crash and never corrupt, but an
OS crash or power loss can roll back the last transactions that were reported committed,
so a person may have been told "approved" for a decision the database no longer has.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from bot.errors import StoreError
from store.tx import (
    Body,
    IntegrityViolation,
    Statement,
    follow_up_values,
    placeholders,
    single,
)

Synchronous = Literal["FULL", "NORMAL"]
Params = Sequence[Any]
T = TypeVar("T")
DEFAULT_BUSY_TIMEOUT_MS = 5000
WAL_RETRY_SECONDS = 0.01


@dataclass(frozen=True, kw_only=True)
class _Job(Generic[T]):
    work: Callable[[], T]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[T]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return  # the caller stopped waiting; the work itself still ran to its end
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class ConnectionThread:
    """One thread, one job at a time, in submission order. `stop()` drains, then ends.

    A daemon thread: a store the program forgot to close must not keep the process alive
    at exit. That is safe for the writer because a write transaction is atomic in SQLite:
    a process that ends in the middle of one leaves the database as before it began (the
    next opener rolls the partial WAL frames back). `close()` is still the clean way out:
    it lets queued transactions finish.
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._stopped = False
        self._thread.start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                result, error = job.work(), None
            except BaseException as raised:  # handed to the awaiting caller
                result, error = None, raised
            # a loop closed while we worked has nobody waiting any more
            with contextlib.suppress(RuntimeError):
                job.loop.call_soon_threadsafe(_settle, job.future, result, error)

    async def run(self, work: Callable[[], T]) -> T:
        """Run `work()` on the thread; its result or exception comes back here."""
        if self._stopped:
            raise RuntimeError(f"the connection thread {self._thread.name} is stopped")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put(_Job(work=work, loop=loop, future=future))
        return await future

    async def stop(self) -> None:
        """Let queued jobs finish, then end the thread."""
        if self._stopped:
            return
        self._stopped = True
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)


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
        self._lock = asyncio.Lock()

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
            writer = await thread.run(lambda: _open_writer(path, synchronous, busy_timeout_ms))
        except BaseException:
            await thread.stop()
            raise
        reader_thread = ConnectionThread(name=f"approvals-store-reader:{path.name}")
        try:
            reader = await reader_thread.run(
                lambda: _open_reader(path, synchronous, busy_timeout_ms)
            )
        except BaseException:
            await reader_thread.stop()
            await thread.run(writer.close)
            await thread.stop()
            raise
        return cls(path, thread=thread, writer=writer, reader_thread=reader_thread, reader=reader)

    async def transact(self, body: Callable[[], Body[T]]) -> T:
        """Run the transaction body made by `body()` (store.tx) whole on the writer thread,
        inside BEGIN IMMEDIATE ... COMMIT."""
        return await self.transaction(lambda connection: drive(body(), connection))

    async def transact_one(self, statement: Statement) -> Any:
        """One statement as its own transaction (the same one hand-off as any other)."""
        return await self.transact(single(statement))

    async def transaction(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run `body(connection)` on the writer thread inside BEGIN IMMEDIATE ... COMMIT.

        Any exception rolls the whole transaction back and propagates; sqlite3 errors
        become StoreError. `body` must not touch the event loop (it runs on the thread).
        """
        async with self._lock:
            return await self._thread.run(lambda: self._transact(body))

    def _transact(self, body: Callable[[sqlite3.Connection], T]) -> T:
        connection = self._writer
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            raise StoreError(f"cannot start a write on {self.path}: {error}") from error
        try:
            result = body(connection)
            connection.execute("COMMIT")
        except BaseException as error:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            if isinstance(error, sqlite3.Error | IntegrityViolation):
                raise StoreError(f"write failed on {self.path}: {error}") from error
            raise
        return result

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


def _open_writer(path: Path, synchronous: Synchronous, busy_timeout_ms: int) -> sqlite3.Connection:
    return _connect(
        path, synchronous, busy_timeout_ms, lambda c: _enable_wal(c, path, busy_timeout_ms)
    )


def _open_reader(path: Path, synchronous: Synchronous, busy_timeout_ms: int) -> sqlite3.Connection:
    return _connect(path, synchronous, busy_timeout_ms, lambda c: c.execute("PRAGMA query_only=ON"))


def _connect(
    path: Path,
    synchronous: Synchronous,
    busy_timeout_ms: int,
    finish: Callable[[sqlite3.Connection], object],
) -> sqlite3.Connection:
    """Open `path` with rows as sqlite3.Row and our pragmas, then `finish` it; a connection
    that fails along the way is closed."""
    try:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as error:
        raise StoreError(f"cannot open database {path}: {error}") from error
    try:
        connection.row_factory = sqlite3.Row
        _apply_pragmas(connection, synchronous, busy_timeout_ms)
        finish(connection)
    except BaseException:
        connection.close()
        raise
    return connection


def _apply_pragmas(connection: sqlite3.Connection, synchronous: Synchronous, busy_ms: int) -> None:
    connection.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
    connection.execute(f"PRAGMA synchronous={synchronous}")
    connection.execute("PRAGMA foreign_keys=ON")


def _enable_wal(connection: sqlite3.Connection, path: Path, busy_timeout_ms: int) -> None:
    """Switch to WAL (persistent in the file). Changing the journal mode needs the file to
    itself and SQLite does not wait on its busy handler for it, so retry until the busy
    timeout when another process opens the same new database at the same moment. (This
    runs on the writer thread, so the short sleeps do not block the event loop.)"""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            mode = str(connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise StoreError(f"cannot switch {path} to WAL mode: {error}") from error
            time.sleep(WAL_RETRY_SECONDS)
            continue
        if mode != "wal":
            raise StoreError(f"database {path} refused WAL mode (journal_mode={mode})")
        return


_SQLITE_SQL: dict[str, str] = {}


_ROW_LOCK = re.compile(r" FOR UPDATE(?: SKIP LOCKED)?")


def sqlite_sql(sql: str) -> str:
    """The shared SQL (store.tx) as SQLite runs it: without `FOR UPDATE` or `FOR UPDATE
    SKIP LOCKED`, since the writer holds the whole database for its transaction (`BEGIN
    IMMEDIATE`): no row is ever locked by another transaction, so none is skipped."""
    found = _SQLITE_SQL.get(sql)
    if found is None:
        found = _SQLITE_SQL[sql] = _ROW_LOCK.sub("", sql)
    return found


def drive(body: Body[T], connection: sqlite3.Connection) -> T:
    """Run a transaction body (store.tx) on `connection`, statement by statement; a
    constraint's refusal is thrown into the body as IntegrityViolation."""
    try:
        statement = next(body)
        while True:
            try:
                result = execute(connection, statement)
            except sqlite3.IntegrityError as error:
                statement = body.throw(IntegrityViolation(str(error)))
            else:
                statement = body.send(result)
    except StopIteration as done:
        outcome: T = done.value
        return outcome


def execute(connection: sqlite3.Connection, statement: Statement) -> Any:
    cursor = connection.execute(sqlite_sql(statement.sql), statement.params)
    if statement.then:
        return _follow_up(connection, statement, cursor.fetchall())
    if statement.fetch == "one":
        return cursor.fetchone()
    if statement.fetch == "all":
        return cursor.fetchall()
    return None


def _follow_up(connection: sqlite3.Connection, statement: Statement, changed: list[Any]) -> Any:
    """A change's follow-up INSERTs (store.tx.changing), one per changed row, right after
    it in the same transaction; the change's result."""
    for row in changed:
        for follow_up in statement.then:
            marks = placeholders(len(follow_up.columns))
            connection.execute(
                f"INSERT INTO {follow_up.table} ({', '.join(follow_up.columns)}) VALUES ({marks})",
                follow_up_values(follow_up, row),
            )
    if statement.fetch == "one":
        return changed[0] if changed else None
    return changed if statement.fetch == "all" else None
