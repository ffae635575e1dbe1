"""The sweeps: expiry, reminders and the takeover claim act once per row, in bounded
batches until nothing is left, and on Postgres a second sweeper skips the rows another
transaction holds (`FOR UPDATE SKIP LOCKED`) instead of waiting for them.

The batch tests run on both engines. Holding one row while another connection sweeps
is a Postgres test: SQLite's one writer holds the whole database, so no other
transaction ever holds a row there."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest

from bot.errors import InputError
from store import SqliteStore, open_store
from store.crypto import KeyRing
from tests.store.postgres_db import fresh_postgres_database
from tests.store.store_helpers import T0, Clock, make_run, new_approval

DEADLINE = 10.0  # a sweep that waits on the held row would stay blocked until released
TTL = 15.0


async def due_approvals(store: SqliteStore, count: int, *, remind: bool = False) -> list[str]:
    """`count` runs with one approval each, all overdue by now (or, with `remind`, due
    for their reminder and not yet expired); their ids."""
    ids = []
    for index in range(count):
        run_id = f"run-{index}"
        await make_run(store, run_id)
        approval = new_approval(run_id, expires_at=T0 + timedelta(hours=2 if remind else 0))
        if remind:
            approval = dataclasses.replace(approval, remind_at=T0 + timedelta(minutes=index))
        await store.add_approvals([approval])
        ids.append(approval.approval_id)
    return ids


async def kinds(store: SqliteStore, kind: str) -> list[str]:
    """The approvals with a `kind` audit event, one entry per event."""
    return sorted(e.approval_id or "" for e in await store.audit_events() if e.kind == kind)


async def test_expiry_takes_batch_after_batch_until_none_is_left(
    store: SqliteStore, database_url: str, keyring: KeyRing, clock: Clock
) -> None:
    ids = await due_approvals(store, 5)
    clock.advance(1)
    expired = await store.expire_due(batch=2)
    assert [record.approval_id for record in expired] == sorted(ids)
    assert {record.status for record in expired} == {"expired"}
    assert await kinds(store, "expired") == sorted(ids)
    other = await open_store(database_url, keyring=keyring, clock=clock, environ={})
    try:
        assert await other.expire_due(batch=2) == []  # acted on once
    finally:
        await other.close()
    assert (await store.verify_audit()).ok


async def test_reminders_take_batch_after_batch_until_none_is_left(store: SqliteStore) -> None:
    ids = await due_approvals(store, 5, remind=True)
    assert await store.claim_reminders(now=T0 - timedelta(seconds=1)) == []
    claimed = await store.claim_reminders(now=T0 + timedelta(hours=1), batch=2)
    assert [record.approval_id for record in claimed] == sorted(ids)
    assert await store.claim_reminders(now=T0 + timedelta(hours=1), batch=2) == []
    assert await kinds(store, "reminded") == sorted(ids)


async def test_a_batch_is_at_least_one_approval(store: SqliteStore) -> None:
    with pytest.raises(InputError, match="batch holds 1 to 500 approvals, not 0"):
        await store.expire_due(batch=0)
    with pytest.raises(InputError, match="not 501"):
        await store.claim_reminders(now=T0, batch=501)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
async def two_stores(
    postgres_url: str, keyring: KeyRing, clock: Clock
) -> AsyncIterator[tuple[SqliteStore, SqliteStore]]:
    """Two stores (two pools, as two replicas have) on one Postgres database."""
    first = await open_store(postgres_url, keyring=keyring, clock=clock, environ={})
    second = await open_store(postgres_url, keyring=keyring, clock=clock, environ={})
    try:
        yield first, second  # type: ignore[misc]
    finally:
        await second.close()
        await first.close()


@contextlib.asynccontextmanager
async def holding(url: str, table: str, key: str, value: str) -> AsyncIterator[None]:
    """Another transaction, open for the block, that locked one row (`SELECT ... FOR
    UPDATE`), as a replica in the middle of acting on it does; rolled back after."""
    import asyncpg

    connection: Any = await asyncpg.connect(url, timeout=10)
    try:
        transaction = connection.transaction()
        await transaction.start()
        locked = await connection.fetchrow(
            f"SELECT 1 FROM {table} WHERE {key} = $1 FOR UPDATE", value
        )
        assert locked is not None
        yield
        await transaction.rollback()
    finally:
        await connection.close()


async def test_a_sweep_skips_the_approval_another_transaction_holds(
    two_stores: tuple[SqliteStore, SqliteStore], postgres_url: str, clock: Clock
) -> None:
    first, second = two_stores
    ids = await due_approvals(first, 4)
    clock.advance(1)
    held = ids[1]
    async with holding(postgres_url, "approvals", "approval_id", held):
        async with asyncio.timeout(DEADLINE):
            expired = await second.expire_due(batch=2)
        assert [record.approval_id for record in expired] == [i for i in ids if i != held]
        still = await first.get_approval(held)
        assert still is not None
        assert still.status == "pending"
    async with asyncio.timeout(DEADLINE):
        [taken] = await first.expire_due()
    assert taken.approval_id == held
    assert await kinds(first, "expired") == sorted(ids)  # each expired once
    assert (await first.verify_audit()).ok


async def test_a_reminder_sweep_skips_the_approval_another_transaction_holds(
    two_stores: tuple[SqliteStore, SqliteStore], postgres_url: str
) -> None:
    first, second = two_stores
    ids = await due_approvals(first, 3, remind=True)
    now = T0 + timedelta(hours=1)
    async with holding(postgres_url, "approvals", "approval_id", ids[0]):
        async with asyncio.timeout(DEADLINE):
            claimed = await second.claim_reminders(now=now)
        assert [record.approval_id for record in claimed] == ids[1:]
    async with asyncio.timeout(DEADLINE):
        [taken] = await first.claim_reminders(now=now)
    assert taken.approval_id == ids[0]
    assert await kinds(first, "reminded") == sorted(ids)


async def abandoned(store: SqliteStore, clock: Clock) -> None:
    """run-1, left `resuming` by a worker whose lease ran out."""
    await make_run(store, "run-1")
    lease = await store.claim_run(
        "run-1", expected_status="paused", new_status="resuming", owner="dead", lease_seconds=TTL
    )
    assert lease is not None
    clock.advance(TTL + 1)


@pytest.mark.parametrize("table", ["runs", "run_leases"])
async def test_a_takeover_skips_a_run_another_transaction_holds(
    two_stores: tuple[SqliteStore, SqliteStore], postgres_url: str, clock: Clock, table: str
) -> None:
    first, second = two_stores
    await abandoned(first, clock)

    def take_over(store: SqliteStore) -> Any:
        return store.claim_run(
            "run-1", expected_status="resuming", new_status="resuming", owner="w2",
            lease_seconds=TTL, skip_locked=True,
        )  # fmt: skip

    async with holding(postgres_url, table, "run_id", "run-1"):
        async with asyncio.timeout(DEADLINE):
            assert await take_over(second) is None
    async with asyncio.timeout(DEADLINE):
        taken = await take_over(second)
    assert taken is not None
    assert (taken.owner, taken.token) == ("w2", 2)


async def test_a_takeover_that_skips_locks_still_names_an_unknown_run(
    store: SqliteStore,
) -> None:
    with pytest.raises(InputError, match="no run 'nope'"):
        await store.claim_run(
            "nope", expected_status="resuming", new_status="resuming", owner="w1",
            lease_seconds=TTL, skip_locked=True,
        )  # fmt: skip
