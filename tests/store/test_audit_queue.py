"""Audit events are queued with the change they record and linked into the chain after:
nothing is lost or linked twice, the order holds, every read sees every commit, and on
Postgres events a dead process queued are linked by another."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest

from store import SqliteStore, open_store
from store.api import Store
from store.crypto import KeyRing
from tests.polling import until
from tests.store.postgres_db import fresh_postgres_database
from tests.store.store_helpers import DIGEST, Clock, make_run, new_approval, raw


def queued_count(database_url: str) -> int:
    with raw(database_url) as connection:
        row = connection.execute("SELECT COUNT(*) FROM audit_queue").fetchone()
    return int(row[0])


async def test_a_decision_and_its_event_commit_together_and_read_back_linked(
    store: SqliteStore,
) -> None:
    await make_run(store)
    [approval] = await store.add_approvals([new_approval(approval_id="ap-1")])
    outcome = await store.decide(
        approval.approval_id, decision="approved", decider="U-A", reason="ok"
    )
    assert outcome.won
    decided = [e for e in await store.audit_events(approval_id="ap-1") if e.kind == "decided"]
    assert [(e.actor, e.run_id, dict(e.detail)) for e in decided] == [
        ("U-A", "run-1", {"decision": "approved", "reason": "ok", "message": None})
    ]
    verification = await store.verify_audit()
    assert verification.ok
    assert verification.checked == len(await store.audit_events())


async def test_sqlite_links_inside_every_write_transaction(
    sqlite_store: SqliteStore, db_path: Any
) -> None:
    await make_run(sqlite_store)
    await sqlite_store.add_approvals([new_approval(approval_id="ap-1")])
    await sqlite_store.vote("ap-1", decision="approved", voter="U-A", digest=DIGEST, reason="ok")
    assert queued_count(str(db_path)) == 0
    with raw(str(db_path)) as connection:
        kinds = [row[0] for row in connection.execute("SELECT kind FROM audit_events")]
    assert "decided" in kinds


async def test_a_refused_change_queues_nothing(store: SqliteStore) -> None:
    await make_run(store)
    await store.add_approvals([new_approval(approval_id="ap-1")])
    await store.decide("ap-1", decision="approved", decider="U-A", reason="ok")
    before = await store.audit_events()
    lost = await store.decide("ap-1", decision="rejected", decider="U-B", reason="no")
    assert not lost.won
    assert lost.record.decider == "U-A"
    assert await store.audit_events() == before


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
async def postgres(
    postgres_url: str, keyring: KeyRing, clock: Clock
) -> AsyncIterator[tuple[str, SqliteStore]]:
    opened = await open_store(postgres_url, keyring=keyring, clock=clock, environ={})
    try:
        yield postgres_url, opened  # type: ignore[misc]
    finally:
        await opened.close()


async def test_an_event_committed_after_a_later_one_is_linked_after_it_not_lost(
    postgres: tuple[str, SqliteStore],
) -> None:
    url, store = postgres
    late = await asyncpg.connect(url)
    try:
        transaction = late.transaction()
        await transaction.start()
        await late.execute(  # takes a queue id now, commits after the store's events
            "INSERT INTO audit_queue (kind, actor, detail, at) "
            "VALUES ('note', 'late', '{}', '2026-12-01T00:00:00.000000Z')"
        )
        await store.append_audit("note", actor="early")
        assert [e.actor for e in await store.audit_events()] == ["early"]
        await transaction.commit()
    finally:
        await late.close()
    events = await store.audit_events()
    assert [(e.seq, e.actor) for e in events] == [(1, "early"), (2, "late")]
    assert (await store.verify_audit()).ok


async def test_events_a_dead_process_left_queued_are_linked_by_another(
    postgres: tuple[str, SqliteStore],
) -> None:
    url, _store = postgres
    with raw(url) as connection:  # committed by a replica killed before it linked them
        connection.execute(
            "INSERT INTO audit_queue (kind, actor, detail, at) "
            "VALUES ('note', 'dead', '{}', '2026-12-01T00:00:00.000000Z')"
        )

    async def linked() -> bool | None:
        return True if queued_count(url) == 0 else None

    await until(linked, "the sequencer never linked the orphaned event")
    with raw(url) as connection:
        rows = connection.execute("SELECT seq, actor FROM audit_events").fetchall()
    assert [tuple(row) for row in rows] == [(1, "dead")]


async def test_nothing_is_left_queued_once_a_store_has_closed(
    postgres_url: str, keyring: KeyRing, clock: Clock
) -> None:
    store = await open_store(postgres_url, keyring=keyring, clock=clock, environ={})
    for n in range(20):
        await store.append_audit("note", actor=f"U{n}")
    await store.close()
    assert queued_count(postgres_url) == 0
    with raw(postgres_url) as connection:
        head = connection.execute("SELECT seq FROM audit_head").fetchone()
    assert int(head[0]) == 20


async def test_stores_of_two_processes_writing_at_once_make_one_chain(
    postgres: tuple[str, SqliteStore], keyring: KeyRing, clock: Clock
) -> None:
    url, first = postgres
    second = await open_store(url, keyring=keyring, clock=clock, environ={})
    try:
        await make_run(first)
        await first.add_approvals(
            [new_approval(call=f"c{n}", approval_id=f"ap-{n}") for n in range(30)]
        )

        async def vote(store: Store, n: int) -> str:
            outcome = await store.vote(
                f"ap-{n % 30}", decision="approved", voter=f"U{n}", digest=DIGEST,
                reason="ok",
            )  # fmt: skip
            return outcome.result

        results = await asyncio.gather(*(vote(first if n % 2 else second, n) for n in range(60)))
        assert results.count("decided") == 30  # each of ap-0..29 once; the rest closed
        decided = [e for e in await second.audit_events() if e.kind == "decided"]
        assert sorted(str(e.approval_id) for e in decided) == sorted(f"ap-{n}" for n in range(30))
        verification = await first.verify_audit()
        assert verification.ok
        assert verification.checked == len(await first.audit_events())
    finally:
        await second.close()


async def test_details_of_any_text_and_number_link_and_verify(store: SqliteStore) -> None:
    """Postgres inserts linked events as one JSON array (store.postgres.dialect): text
    with quotes, backslashes, newlines and any script, floats and whole numbers past 64
    bits come back as written and the chain verifies."""
    details: list[dict[str, Any]] = [
        {"reason": 'a "quoted" \\ back\nslash\ttab', "n": 2**70, "f": 0.1},
        {"reason": "é😀\u2028\x7f", "nested": {"b": [1, None, True], "a": -(2**63)}},
        {"empty": "", "list": []},
    ]
    for detail in details:
        await store.append_audit("note", actor="U-A", detail=detail)
    events = [e for e in await store.audit_events() if e.kind == "note"]
    assert [dict(e.detail) for e in events] == details
    assert (await store.verify_audit()).ok
