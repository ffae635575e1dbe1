"""The SQLite connections: one writer thread behind an asyncio.Lock, one reader thread.

Writes: one sqlite3 connection that lives on its own thread. A write transaction is a
plain function run there whole (`BEGIN IMMEDIATE`, the statements, `COMMIT`, or
`ROLLBACK` on any error), so it costs one hand-off between the event loop and the thread
instead of one per statement: measured by bench/store_decisions.py, per-statement awaits made a
decision (5 statements) 2.7x slower than the raw compare-and-set it wraps. Once started
a transaction cannot be cut in half by a cancelled caller: the thread finishes it, and
`close()` waits for it. `BEGIN IMMEDIATE` takes the database's write lock up front (other
processes wait up to `busy_timeout`), so no transaction fails half-way on a lock upgrade.

Group commit: write transactions that arrive while the writer is busy are committed
together. Each caller queues its body; whoever gets the writer next takes every body
queued so far (up to `GROUP_LIMIT`) and runs them in one `BEGIN IMMEDIATE ... COMMIT`,
each inside its own SAVEPOINT, so a body that fails rolls back alone and the others
commit. Every caller is answered after the COMMIT that holds its work, never before: a
decision reported committed is on disk exactly as when each had its own transaction,
and every body still sees the writes of the bodies before it. What changes is the number
of fsyncs: with `synchronous=FULL` each COMMIT waits for one (about 5 ms on the shared
test machine), and sixteen approvals resuming at once made ~66 write transactions in a
row, one fsync each (bench/approve_to_effect.py). A body alone in its group runs without
a savepoint, as before. When SQLite itself ends the transaction half-way (an I/O error,
a full disk), every body already run in it is told so (nothing of theirs committed) and
the bodies after it run in a fresh transaction.

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
from functools import partial
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
GROUP_LIMIT = 64  # bodies committed together at most: bounds the first one's wait


@dataclass(frozen=True, kw_only=True)
class _Job(Generic[T]):
    work: Callable[[], T]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[T]


@dataclass(kw_only=True, eq=False)
class _Write(Generic[T]):
    """One caller's write transaction, queued for the next group (see the module doc);
    `alone`: never grouped with others (migrations' raw bodies)."""

    work: Callable[[sqlite3.Connection], T]
    future: asyncio.Future[T]
    alone: bool = False
    taken: bool = False


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
        self._lock = asyncio.Lock()  # one group forms at a time (the thread runs them in turn)
        self._queued: list[_Write[Any]] = []

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

    @property
    def waiting_writes(self) -> int:
        """Write transactions queued and not yet taken into a group."""
        return len(self._queued)

    async def transact(self, body: Callable[[], Body[T]]) -> T:
        """Run the transaction body made by `body()` (store.tx) whole on the writer thread,
        inside BEGIN IMMEDIATE ... COMMIT (with the bodies queued beside it: see the
        module doc)."""
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
        job: _Write[T] = _Write(work=work, future=loop.create_future(), alone=alone)
        self._queued.append(job)
        try:
            async with self._lock:
                if not job.taken:
                    await self._run_on_thread(self._take_group(), loop)
            return await job.future
        except asyncio.CancelledError:
            if not job.taken:
                self._queued.remove(job)
            job.future.cancel()
            raise

    def _take_group(self) -> list[_Write[Any]]:
        """The oldest queued writes that commit together: up to GROUP_LIMIT, stopping
        before one that must be alone (or taking just that one, when it is first)."""
        count = 0
        for job in self._queued[:GROUP_LIMIT]:
            if job.alone and count:
                break
            count += 1
            if job.alone:
                break
        group, self._queued[:count] = self._queued[:count], []
        for job in group:
            job.taken = True
        return group

    async def _run_on_thread(
        self, group: list[_Write[Any]], loop: asyncio.AbstractEventLoop
    ) -> None:
        """Hand `group` to the writer thread. When the thread cannot take it (stopped),
        every caller in it gets that error rather than waiting forever."""
        try:
            await self._thread.run(partial(self._commit_group, group, loop))
        except asyncio.CancelledError:
            raise  # this caller stopped waiting; the thread still answers the group
        except BaseException as error:
            for job in group:
                if not job.future.done():
                    job.future.set_exception(error)

    def _commit_group(self, group: list[_Write[Any]], loop: asyncio.AbstractEventLoop) -> None:
        """On the writer thread: run the group, then hand each caller its outcome."""
        try:
            outcomes = self._run_group(group)
        except BaseException as failed:  # the writer itself failed (a savepoint, a rollback)
            if self._writer.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._writer.execute("ROLLBACK")
            outcomes = [(None, _as_store_error(failed, self.path))] * len(group)
        for job, (result, error) in zip(group, outcomes, strict=True):
            with contextlib.suppress(RuntimeError):  # a closed loop has nobody waiting
                loop.call_soon_threadsafe(_settle, job.future, result, error)

    def _run_group(self, group: Sequence[_Write[Any]]) -> list[_Outcome]:
        """Each write's (result, error), in order, once the group's COMMIT is done."""
        if not group:
            return []
        connection = self._writer
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            failed = StoreError(f"cannot start a write on {self.path}: {error}")
            return [(None, failed)] * len(group)
        grouped = len(group) > 1
        outcomes: list[_Outcome] = []
        for index, job in enumerate(group):
            outcome = self._run_one(job, savepoint=grouped)
            if outcome[1] is not None and not connection.in_transaction:
                # Rolled back whole (alone: by us; grouped: SQLite ended it half-way, so
                # nothing of the bodies before this one committed either).
                lost = StoreError(f"write failed on {self.path}: {outcome[1]}")
                rest = self._run_group(group[index + 1 :])
                return [(None, lost)] * index + [outcome, *rest]
            outcomes.append(outcome)
        try:
            connection.execute("COMMIT")
        except BaseException as error:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            return [(None, _as_store_error(error, self.path))] * len(group)
        return outcomes

    def _run_one(self, job: _Write[Any], *, savepoint: bool) -> _Outcome:
        """One write inside the open transaction: inside a SAVEPOINT in a group (a failure
        rolls back to it), else the transaction is rolled back on failure."""
        connection = self._writer
        if savepoint:
            connection.execute("SAVEPOINT grouped_write")
        try:
            result = job.work(connection)
        except BaseException as error:
            if connection.in_transaction:
                connection.execute("ROLLBACK TO grouped_write" if savepoint else "ROLLBACK")
                if savepoint:
                    connection.execute("RELEASE grouped_write")
            return None, _as_store_error(error, self.path)
        if savepoint:
            connection.execute("RELEASE grouped_write")
        return result, None

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


_Outcome = tuple[Any, BaseException | None]


def _as_store_error(error: BaseException, path: Path) -> BaseException:
    """What a failed write raises to its caller: sqlite3's errors and a constraint's
    refusal as StoreError, anything else as it was."""
    if isinstance(error, sqlite3.Error | IntegrityViolation):
        store_error = StoreError(f"write failed on {path}: {error}")
        store_error.__cause__ = error
        return store_error
    return error


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
