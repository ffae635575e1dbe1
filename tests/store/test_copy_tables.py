"""What `db copy` takes is tied to the schema: every table the migrations make is copied
(`store.copy.TABLES`) or left out with its reason (`store.copy.NOT_COPIED`); and events
a process committed but did not link into the chain before it died go across too."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli import main
from store import open_store
from store.api import Store
from store.copy import NOT_COPIED, TABLES
from store.crypto import KeyRing
from store.keys import format_key
from store.sql import audit
from store.sqlite.store import SqliteStore

TABLES_OF = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
    "postgres": "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()",
}


async def test_every_table_is_copied_or_left_out_with_a_reason(
    store: SqliteStore, engine: str
) -> None:
    made = {row[0] for row in await store.database.read(TABLES_OF[engine])}
    copied = {table for table, _ in TABLES}
    assert not copied & set(NOT_COPIED)
    assert made == copied | set(NOT_COPIED), (
        f"tables neither copied nor left out: {sorted(made - copied - set(NOT_COPIED))}; "
        f"named but not made: {sorted((copied | set(NOT_COPIED)) - made)}"
    )
    assert all(reason.strip() for reason in NOT_COPIED.values())


async def _queue_unlinked_event(path: Path, keyring: KeyRing) -> tuple[int, str]:
    """A store whose last event was committed and never linked (its process died in
    between); (events linked, the head's hash) before it."""
    store = await open_store(str(path), keyring=keyring, environ={})
    try:
        assert isinstance(store, SqliteStore)
        await store.append_audit("note", actor="ops", detail={"n": 1})
        linked = len(await store.audit_events())
        head = await store.audit_head()
        at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
        await store.database.transact(
            lambda: audit.append("note", at=at, actor="ops", detail={"n": 2})
        )  # on the bare database: queued, not linked
        rows = await store.database.read("SELECT COUNT(*) FROM audit_queue")
        assert rows[0][0] == 1
        return linked, head[1]
    finally:
        await store.close()


async def _events(url: str, keyring: KeyRing) -> list[dict[str, object]]:
    store: Store = await open_store(url, keyring=keyring, environ={})
    try:
        assert (await store.verify_audit()).ok
        return [dict(event.detail) for event in await store.audit_events()]
    finally:
        await store.close()


def test_events_left_queued_by_a_dead_process_are_linked_and_copied(
    tmp_path: Path, keyring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPROVALS_KEYS", ",".join(format_key(key) for key in keyring))
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    linked, _ = asyncio.run(_queue_unlinked_event(source, keyring))

    assert main(["db", "copy", "--db", str(source), "--to", str(target)]) == 0

    copied = asyncio.run(_events(str(target), keyring))
    assert len(copied) == linked + 1
    assert copied[-1] == {"n": 2}
    assert copied == asyncio.run(_events(str(source), keyring))
