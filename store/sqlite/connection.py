"""The SQLite connections: one writer behind an asyncio.Lock, one query-only reader.

Every write transaction starts with `BEGIN IMMEDIATE`, so it takes the database's write
lock up front (other processes wait up to `busy_timeout`) and never fails half-way on a
lock upgrade. The journal is WAL, so readers never block the writer.

`synchronous=FULL` (the default) fsyncs the WAL on every commit: a decision that was
acknowledged to Slack survives power loss. `NORMAL` (APPROVALS_SQLITE_SYNCHRONOUS=NORMAL)
fsyncs only at checkpoints: still crash-safe for the process and never corrupt, but an OS
crash or power loss can roll back the last transactions that were reported committed, so
a person may have been told "approved" for a decision the database no longer has.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import aiosqlite

from bot.errors import StoreError

Synchronous = Literal["FULL", "NORMAL"]
Params = Sequence[Any]
T = TypeVar("T")
DEFAULT_BUSY_TIMEOUT_MS = 5000


class Database:
    """A SQLite file opened for the store: `write()` transactions and `read()` queries."""

    def __init__(
        self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection
    ) -> None:
        self.path = path
        self._writer = writer
        self._reader = reader
        self._lock = asyncio.Lock()
        self._inflight: set[asyncio.Task[Any]] = set()

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        synchronous: Synchronous = "FULL",
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> Database:
        writer = await _connect(path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms)
        try:
            await _enable_wal(writer, path, busy_timeout_ms)
            reader = await _connect(path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms)
        except BaseException:
            await writer.close()
            raise
        await reader.execute("PRAGMA query_only=ON")
        return cls(path, writer, reader)

    async def transaction(self, body: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run `body` in one write transaction: BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error).

        The transaction runs in a task this Database owns and is shielded from the
        caller's cancellation: once begun it commits or rolls back as a whole, and the
        connection is never left inside a transaction. A cancelled caller does not learn
        the outcome; `close()` waits for it.
        """
        task = asyncio.create_task(self._run_transaction(body))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return await asyncio.shield(task)

    async def _run_transaction(self, body: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        async with self._lock:
            try:
                await self._writer.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as error:
                raise StoreError(f"cannot start a write on {self.path}: {error}") from error
            try:
                result = await body(self._writer)
                await self._writer.execute("COMMIT")
            except BaseException as error:
                if self._writer.in_transaction:
                    await self._writer.execute("ROLLBACK")
                if isinstance(error, sqlite3.Error):
                    raise StoreError(f"write failed on {self.path}: {error}") from error
                raise
            return result

    async def read(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        """Rows of one query on the reader (its own snapshot of the last commit)."""
        return list(await self._reader.execute_fetchall(sql, params))

    async def read_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        rows = await self.read(sql, params)
        return rows[0] if rows else None

    async def close(self) -> None:
        """Wait for in-flight write transactions, then close both connections."""
        if self._inflight:
            await asyncio.wait(list(self._inflight))
        try:
            await self._reader.close()
        finally:
            await self._writer.close()


async def _connect(
    path: Path, *, synchronous: Synchronous, busy_timeout_ms: int
) -> aiosqlite.Connection:
    try:
        connection = await aiosqlite.connect(path, isolation_level=None)
    except sqlite3.Error as error:
        raise StoreError(f"cannot open database {path}: {error}") from error
    connection.row_factory = sqlite3.Row
    try:
        await connection.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        await connection.execute(f"PRAGMA synchronous={synchronous}")
        await connection.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        await connection.close()
        raise
    return connection


async def _enable_wal(connection: aiosqlite.Connection, path: Path, busy_timeout_ms: int) -> None:
    """Switch to WAL (persistent in the file). Changing the journal mode needs the file to
    itself and SQLite does not wait on its busy handler for it, so retry until the busy
    timeout when another process opens the same new database at the same moment."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + busy_timeout_ms / 1000
    while True:
        try:
            mode = str(await _scalar(connection, "PRAGMA journal_mode=WAL")).lower()
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or loop.time() >= deadline:
                raise StoreError(f"cannot switch {path} to WAL mode: {error}") from error
            await asyncio.sleep(0.01)
            continue
        if mode != "wal":
            raise StoreError(f"database {path} refused WAL mode (journal_mode={mode})")
        return


async def _scalar(connection: aiosqlite.Connection, sql: str) -> Any:
    rows = list(await connection.execute_fetchall(sql))
    return rows[0][0] if rows else None


async def fetch_all(
    connection: aiosqlite.Connection, sql: str, params: Params = ()
) -> list[sqlite3.Row]:
    """Rows of one statement inside a write transaction (one round trip)."""
    return list(await connection.execute_fetchall(sql, params))


async def fetch_one(
    connection: aiosqlite.Connection, sql: str, params: Params = ()
) -> sqlite3.Row | None:
    rows = await fetch_all(connection, sql, params)
    return rows[0] if rows else None
