"""Applying the schema migrations to a Postgres database, at open and by `db migrate`.

The numbered migrations are one ledger for every backend (store.schema); Postgres's SQL
is `store/migrations/postgres/NNNN_name.sql`, the same numbers and names as SQLite's.
The whole pass holds a session advisory lock (`pg_advisory_lock`), so replicas starting
at once, or `approvals-bot db migrate` run while replicas serve, apply each migration
once: the others wait, then find it recorded. Each migration runs in its own
transaction with the `schema_migrations` row that records it, so it is applied and
recorded or neither. Its statements wait at most `LOCK_TIMEOUT` for the locks they need
(an ALTER TABLE waits for the transactions using that table, and blocks new ones while
it waits): past that the migration fails, changes nothing, and can be run again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg

from bot.errors import MigrationError
from store.postgres.connection import PgDatabase
from store.records import MigrationReport
from store.rows import to_db
from store.schema import Migration, bundled_migrations, refuse_newer

BACKEND = "postgres"
LOCK_KEY = 0x61707072_6F76616C  # "approval": the key of the migration advisory lock
LOCK_TIMEOUT = "10s"
LEDGER_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
)


async def current_version(connection: Any) -> int:
    if await connection.fetchval("SELECT to_regclass('schema_migrations')") is None:
        return 0
    found = await connection.fetchval("SELECT MAX(version) FROM schema_migrations")
    return 0 if found is None else int(found)


async def recorded_versions(connection: Any) -> set[int]:
    rows = await connection.fetch("SELECT version FROM schema_migrations")
    return {int(row[0]) for row in rows}


async def migrate(database: PgDatabase, *, now: datetime) -> MigrationReport:
    """Apply every bundled migration the database lacks, under the migration lock;
    refuse a database newer than this build."""
    migrations = bundled_migrations(BACKEND)
    latest = migrations[-1].version if migrations else 0
    connection = await database.connection()
    try:
        await connection.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
        try:
            before = await current_version(connection)
            refuse_newer(before, latest, database=database.location)
            recorded = await recorded_versions(connection) if before else set()
            applied = [
                migration.name
                for migration in migrations
                if migration.version not in recorded
                and await _apply(connection, migration, now=now)
            ]
            after = await current_version(connection)
        finally:
            await connection.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)
    finally:
        await database.release(connection)
    return MigrationReport(before=before, after=after, applied=tuple(applied))


async def _apply(connection: Any, migration: Migration, *, now: datetime) -> bool:
    try:
        async with connection.transaction():
            await connection.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            await connection.execute(LEDGER_DDL)
            done = await connection.fetchval(
                "SELECT 1 FROM schema_migrations WHERE version = $1", migration.version
            )
            if done:
                return False
            await connection.execute(migration.sql)
            await connection.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                migration.version,
                migration.name,
                to_db(now),
            )
            return True
    except (asyncpg.PostgresError, asyncpg.InterfaceError) as error:
        raise MigrationError(f"migration {migration.name} failed: {error}") from error
