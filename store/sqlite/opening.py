"""Opening the store's SQLite connections: the writer (switched to WAL) and the reader
(`query_only`), each with our pragmas.

`synchronous=FULL` (the default) fsyncs the WAL on every commit: a decision that was
acknowledged to Slack survives power loss. `NORMAL` (APPROVALS_SQLITE_SYNCHRONOUS=NORMAL)
fsyncs only at checkpoints: still safe against a process crash and never corrupt, but an
OS crash or power loss can roll back the last transactions that were reported committed,
so a person may have been told "approved" for a decision the database no longer has.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from bot.errors import StoreError

Synchronous = Literal["FULL", "NORMAL"]
DEFAULT_BUSY_TIMEOUT_MS = 5000


WAL_RETRY_SECONDS = 0.01


def open_writer(path: Path, synchronous: Synchronous, busy_timeout_ms: int) -> sqlite3.Connection:
    return _connect(
        path, synchronous, busy_timeout_ms, lambda c: _enable_wal(c, path, busy_timeout_ms)
    )


def open_reader(path: Path, synchronous: Synchronous, busy_timeout_ms: int) -> sqlite3.Connection:
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
