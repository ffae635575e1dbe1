"""Migrations: recorded in schema_migrations, applied once, newer databases refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.errors import MigrationError
from store import open_store
from store.crypto import KeyRing
from store.schema import bundled_migrations
from store.sqlite.migrations import split_statements
from tests.store.conftest import ENGINES
from tests.store.store_helpers import make_run, raw


async def test_fresh_database_records_every_migration(
    engine: str, database_url: str, keyring: KeyRing
) -> None:
    store = await open_store(database_url, keyring=keyring, environ={})
    try:
        latest = bundled_migrations(engine)[-1]
        assert store.migration_report.before == 0
        assert store.migration_report.after == latest.version
        assert store.migration_report.applied[0] == "0001_initial"
    finally:
        await store.close()
    with raw(database_url) as connection:
        rows = connection.execute(
            "SELECT version, name FROM schema_migrations ORDER BY version"
        ).fetchall()
    assert rows[0] == (1, "0001_initial")
    assert rows[-1] == (latest.version, latest.name)

    again = await open_store(database_url, keyring=keyring, environ={})
    await again.close()
    assert again.migration_report.applied == ()


async def test_a_database_from_an_earlier_build_is_brought_up_to_date(
    engine: str, database_url: str, keyring: KeyRing
) -> None:
    """The first two migrations applied and recorded the way an earlier build did; the
    rows it wrote survive, and opening applies only what is missing."""
    shipped = bundled_migrations(engine)
    with raw(database_url) as connection:
        for migration in shipped[:2]:
            connection.executescript(migration.sql)
        connection.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at TEXT NOT NULL)"
        )
        for migration in shipped[:2]:
            connection.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00.000000Z')",
                (migration.version, migration.name),
            )
    store = await open_store(database_url, keyring=keyring, environ={})
    try:
        await make_run(store)
        assert (store.migration_report.before, store.migration_report.after) == (
            2,
            shipped[-1].version,
        )
        assert store.migration_report.applied == tuple(m.name for m in shipped[2:])
        assert await store.load_run_state("run-1") == '{"n": 1}'
    finally:
        await store.close()
    with raw(database_url) as connection:
        recorded = connection.execute(
            "SELECT version, name FROM schema_migrations ORDER BY version"
        ).fetchall()
    assert recorded == [(m.version, m.name) for m in shipped]


async def test_concurrent_openers_apply_each_migration_once(
    engine: str, database_url: str, keyring: KeyRing
) -> None:
    stores = await asyncio.gather(
        *(open_store(database_url, keyring=keyring, environ={}) for _ in range(3))
    )
    try:
        applied = sorted(name for s in stores for name in s.migration_report.applied)
        assert applied == [migration.name for migration in bundled_migrations(engine)]
    finally:
        for store in stores:
            await store.close()


async def test_a_newer_database_is_refused_naming_both_versions(
    engine: str, database_url: str, keyring: KeyRing
) -> None:
    await (await open_store(database_url, keyring=keyring, environ={})).close()
    latest = bundled_migrations(engine)[-1].version
    with raw(database_url) as connection:
        connection.execute(
            "INSERT INTO schema_migrations VALUES (?, 'future', '2030-01-01T00:00:00.000000Z')",
            (latest + 1,),
        )
    with pytest.raises(MigrationError, match=f"version {latest + 1}.*supports \\({latest}\\)"):
        await open_store(database_url, keyring=keyring, environ={})


def test_the_sqlite_file_is_intact_after_migrating(db_path: Path, keyring: KeyRing) -> None:
    async def migrate_fresh() -> None:
        await (await open_store(str(db_path), keyring=keyring, environ={})).close()

    asyncio.run(migrate_fresh())
    with raw(db_path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_both_engines_ship_the_same_numbered_ledger() -> None:
    names = {engine: [m.name for m in bundled_migrations(engine)] for engine in ENGINES}
    assert names["postgres"] == names["sqlite"]


def test_statements_split_keeps_trigger_bodies_whole() -> None:
    sql = (
        "-- comment\nCREATE TABLE t (a);\n"
        "CREATE TRIGGER x AFTER INSERT ON t BEGIN\n  SELECT 1;\n  SELECT 2;\nEND;\n"
    )
    statements = split_statements(sql)
    assert len(statements) == 2
    assert statements[1].startswith("CREATE TRIGGER")
    assert statements[1].endswith("END;")
    with pytest.raises(MigrationError, match="incomplete"):
        split_statements("CREATE TABLE t (a)")
