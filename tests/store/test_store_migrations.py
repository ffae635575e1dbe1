"""Migrations: recorded in schema_migrations, applied once, newer databases refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from store_helpers import raw

from bot.errors import MigrationError
from store import open_store
from store.crypto import KeyRing
from store.sqlite.migrations import bundled_migrations, split_statements


async def test_fresh_database_records_every_migration(db_path: Path, keyring: KeyRing) -> None:
    store = await open_store(str(db_path), keyring=keyring, environ={})
    try:
        latest = bundled_migrations()[-1]
        assert store.migration_report.before == 0
        assert store.migration_report.after == latest.version
        assert store.migration_report.applied[0] == "0001_initial"
        assert await store.schema_version() == latest.version
        assert await store.integrity_check() == "ok"
    finally:
        await store.close()
    with raw(db_path) as connection:
        rows = connection.execute("SELECT version, name FROM schema_migrations").fetchall()
    assert rows[0] == (1, "0001_initial")

    again = await open_store(str(db_path), keyring=keyring, environ={})
    await again.close()
    assert again.migration_report.applied == ()


async def test_concurrent_openers_apply_each_migration_once(
    db_path: Path, keyring: KeyRing
) -> None:
    stores = await asyncio.gather(
        *(open_store(str(db_path), keyring=keyring, environ={}) for _ in range(3))
    )
    try:
        applied = sorted(name for s in stores for name in s.migration_report.applied)
        assert applied == [migration.name for migration in bundled_migrations()]
    finally:
        for store in stores:
            await store.close()


async def test_a_newer_database_is_refused_naming_both_versions(
    db_path: Path, keyring: KeyRing
) -> None:
    await (await open_store(str(db_path), keyring=keyring, environ={})).close()
    latest = bundled_migrations()[-1].version
    with raw(db_path) as connection:
        connection.execute(
            "INSERT INTO schema_migrations VALUES (?, 'future', '2030-01-01T00:00:00.000000Z')",
            (latest + 1,),
        )
    with pytest.raises(MigrationError, match=f"version {latest + 1}.*supports \\({latest}\\)"):
        await open_store(str(db_path), keyring=keyring, environ={})


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
