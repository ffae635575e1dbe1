"""A database looked at without being changed (`approvals-bot doctor`): does it exist,
which migrations it has and lacks, which keys its sealed data needs.

Opening a store migrates it and may make its key file; this does neither. A SQLite file
is read through a read-only connection; a Postgres database through one short-lived
connection.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

from bot.errors import StoreError
from store.config import PostgresLocation, SqliteLocation, parse_database_url
from store.schema import bundled_migrations
from store.sql.keys import NEEDED_KEY_IDS, SEALED_KEY_IDS

MIGRATIONS_TABLE = "schema_migrations"


@dataclass(frozen=True, kw_only=True)
class DatabaseState:
    location: str  # for messages: a path, a URL without its password
    engine: str  # "sqlite" or "postgres"
    exists: bool
    recorded: frozenset[int] = frozenset()  # the migrations the database has
    sealed: frozenset[str] | None = None  # key ids its sealed data names (None: not read)
    needed: frozenset[str] | None = None  # of them, those runs not finished need

    @property
    def version(self) -> int:
        return max(self.recorded, default=0)

    @property
    def latest(self) -> int:
        return bundled_migrations(self.engine)[-1].version

    @property
    def pending(self) -> list[str]:
        """The bundled migrations the database lacks (applied when the bot opens it)."""
        return [m.name for m in bundled_migrations(self.engine) if m.version not in self.recorded]

    @property
    def newer(self) -> bool:
        """Migrated by a newer build than this one (this build refuses it)."""
        return self.version > self.latest


async def inspect_database(url: str) -> DatabaseState:
    """The state of the database at `url`, changing nothing (StoreError when it cannot
    be read)."""
    location = parse_database_url(url)
    if isinstance(location, SqliteLocation):
        return await asyncio.to_thread(_inspect_sqlite, location)
    return await _inspect_postgres(location)


def _inspect_sqlite(location: SqliteLocation) -> DatabaseState:
    path = location.path
    if not path.exists():
        return DatabaseState(location=str(path), engine="sqlite", exists=False)
    try:
        with closing(sqlite3.connect(_read_only(path), uri=True)) as connection:
            has_ledger = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                (MIGRATIONS_TABLE,),
            ).fetchone()
            recorded = _versions(connection.execute, has_ledger is not None)
            state = DatabaseState(
                location=str(path), engine="sqlite", exists=True, recorded=recorded
            )
            if state.pending or state.newer:
                return state  # the seal columns may not be there yet
            sealed = frozenset(str(row[0]) for row in connection.execute(SEALED_KEY_IDS))
            needed = frozenset(str(row[0]) for row in connection.execute(NEEDED_KEY_IDS))
    except sqlite3.Error as error:
        raise StoreError(f"cannot read the database {path}: {error}") from None
    return DatabaseState(
        location=str(path), engine="sqlite", exists=True, recorded=recorded, sealed=sealed,
        needed=needed,
    )  # fmt: skip


def _read_only(path: Path) -> str:
    return f"file:{pathname2url(str(path.resolve()))}?mode=ro"


def _versions(execute: Any, has_ledger: bool) -> frozenset[int]:
    if not has_ledger:
        return frozenset()
    return frozenset(int(row[0]) for row in execute(f"SELECT version FROM {MIGRATIONS_TABLE}"))


async def _inspect_postgres(location: PostgresLocation) -> DatabaseState:
    import asyncpg

    try:
        connection = await asyncpg.connect(location.dsn, timeout=10)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as error:
        raise StoreError(f"cannot open database {location.display}: {error}") from None
    try:
        ledger = await connection.fetchval("SELECT to_regclass($1)", MIGRATIONS_TABLE)
        rows = await connection.fetch(f"SELECT version FROM {MIGRATIONS_TABLE}") if ledger else []
        state = DatabaseState(
            location=location.display,
            engine="postgres",
            exists=True,
            recorded=frozenset(int(row[0]) for row in rows),
        )
        if state.pending or state.newer:
            return state
        sealed = await connection.fetch(SEALED_KEY_IDS)
        needed = await connection.fetch(NEEDED_KEY_IDS)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
        raise StoreError(f"cannot read the database {location.display}: {error}") from None
    finally:
        await connection.close()
    return DatabaseState(
        location=location.display,
        engine="postgres",
        exists=True,
        recorded=state.recorded,
        sealed=frozenset(str(row[0]) for row in sealed),
        needed=frozenset(str(row[0]) for row in needed),
    )
