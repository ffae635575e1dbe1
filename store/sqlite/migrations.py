"""Applying the schema migrations to a SQLite database, at open.

The numbered migrations are backend-neutral in shape (store.schema); SQLite's own SQL is
`store/migrations/sqlite/NNNN_name.sql`. Each one runs in its own `BEGIN IMMEDIATE`
transaction together with the `schema_migrations` row that records it, so a crash leaves
it either applied and recorded or neither. Two processes opening at once serialize on the
write lock, and the second finds the migration already recorded. A database recorded
at a version newer than this build knows is refused, naming both versions.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from bot.errors import MigrationError
from store.records import MigrationReport
from store.rows import to_db
from store.schema import Migration, bundled_migrations, refuse_newer
from store.sqlite.connection import Database

BACKEND = "sqlite"
LEDGER_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
)


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (trigger bodies stay whole)."""
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        if not buffer and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise MigrationError(f"migration ends with an incomplete statement: {buffer[:60]!r}")
    return statements


async def current_version(database: Database) -> int:
    rows = await database.read(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    )
    if not rows:
        return 0
    row = await database.read_one("SELECT MAX(version) FROM schema_migrations")
    return int(row[0]) if row is not None and row[0] is not None else 0


async def recorded_versions(database: Database) -> set[int]:
    if not await current_version(database):
        return set()
    return {int(row[0]) for row in await database.read("SELECT version FROM schema_migrations")}


async def migrate(database: Database, *, now: datetime) -> MigrationReport:
    """Apply every bundled migration the database lacks; refuse a newer database."""
    migrations = bundled_migrations(BACKEND)
    latest = migrations[-1].version if migrations else 0
    before = await current_version(database)
    refuse_newer(before, latest, database=str(database.path))
    recorded = await recorded_versions(database)
    applied: list[str] = []
    for migration in migrations:
        if migration.version not in recorded and await _apply(database, migration, now=now):
            applied.append(migration.name)
    after = await current_version(database)
    refuse_newer(after, latest, database=str(database.path))
    return MigrationReport(before=before, after=after, applied=tuple(applied))


async def _apply(database: Database, migration: Migration, *, now: datetime) -> bool:
    def body(connection: sqlite3.Connection) -> bool:
        connection.execute(LEDGER_DDL)
        done = connection.execute(
            "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
        ).fetchall()
        if done:
            return False  # another process applied it while we waited for the lock
        for statement in split_statements(migration.sql):
            connection.execute(statement)
        connection.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.name, to_db(now)),
        )
        return True

    try:
        return await database.transaction(body)
    except MigrationError:
        raise
    except Exception as error:
        raise MigrationError(f"migration {migration.name} failed: {error}") from error
