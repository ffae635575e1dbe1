"""Numbered schema migrations, recorded in `schema_migrations`, applied at open.

Migrations are the files `store/migrations/NNNN_name.sql`. Each one runs in its own
`BEGIN IMMEDIATE` transaction together with the row that records it, so a crash leaves
it either applied and recorded or neither. Two processes opening at once serialize on the
write lock, and the second finds the migration already recorded. A database recorded
at a version newer than this build knows is refused, naming both versions.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from importlib import resources

from bot.errors import MigrationError
from store.sqlite.connection import Database, fetch_all
from store.sqlite.timefmt import to_db

MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
LEDGER_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
)


@dataclass(frozen=True, kw_only=True)
class Migration:
    version: int
    name: str
    sql: str


@dataclass(frozen=True, kw_only=True)
class MigrationReport:
    before: int  # schema version found at open (0: empty database)
    after: int
    applied: tuple[str, ...]  # "0001_initial", ...


def bundled_migrations() -> list[Migration]:
    """The migrations shipped with this build, in order, numbered 1..N without gaps."""
    found: list[Migration] = []
    for entry in resources.files("store").joinpath("migrations").iterdir():
        match = MIGRATION_NAME.match(entry.name)
        if match:
            found.append(
                Migration(
                    version=int(match.group(1)),
                    name=entry.name.removesuffix(".sql"),
                    sql=entry.read_text(encoding="utf-8"),
                )
            )
    found.sort(key=lambda migration: migration.version)
    expected = list(range(1, len(found) + 1))
    if [migration.version for migration in found] != expected:
        raise MigrationError("bundled migrations are not numbered 1..N without gaps")
    return found


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


async def migrate(database: Database, *, now: datetime) -> MigrationReport:
    """Apply every bundled migration the database lacks; refuse a newer database."""
    migrations = bundled_migrations()
    latest = migrations[-1].version if migrations else 0
    before = await current_version(database)
    _refuse_newer(before, latest, database)
    applied: list[str] = []
    for migration in migrations:
        if migration.version > before and await _apply(database, migration, now=now):
            applied.append(migration.name)
    after = await current_version(database)
    _refuse_newer(after, latest, database)
    return MigrationReport(before=before, after=after, applied=tuple(applied))


def _refuse_newer(found: int, latest: int, database: Database) -> None:
    if found > latest:
        raise MigrationError(
            f"database {database.path} is at schema version {found}, newer than this "
            f"build supports ({latest}); upgrade approvals-bot or use another database"
        )


async def _apply(database: Database, migration: Migration, *, now: datetime) -> bool:
    def body(connection: sqlite3.Connection) -> bool:
        connection.execute(LEDGER_DDL)
        done = fetch_all(
            connection, "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
        )
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
