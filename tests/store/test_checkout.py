"""The store's Postgres connections kept between uses (store.postgres.checkout): a use
takes a kept connection instead of asyncpg's acquire and release, a failed one goes
back to the pool, takers beyond the pool's size wait their turn, and a cancelled
waiter loses no connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest

from bot.errors import StoreError
from store.postgres.checkout import _closed
from store.postgres.connection import PgDatabase
from store.tx import one
from tests.store.postgres_db import fresh_postgres_database


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
async def database(postgres_url: str) -> AsyncIterator[PgDatabase]:
    opened = await PgDatabase.open(postgres_url, location="test", pool_size=2)
    try:
        yield opened
    finally:
        await opened.close()


def count_pool_calls(database: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the store goes to asyncpg's pool, by method (on the class: a Pool's
    attributes are slots)."""
    pool = database._pool
    calls = {"acquire": 0, "release": 0}

    def counted(name: str) -> Any:
        method = getattr(type(pool), name)

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if self is pool:
                calls[name] += 1
            return method(self, *args, **kwargs)

        return call

    for name in calls:
        monkeypatch.setattr(type(pool), name, counted(name))
    return calls


async def test_uses_keep_their_connection_instead_of_the_pools_acquire_and_release(
    database: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_pool_calls(database, monkeypatch)
    pids = set()
    for _ in range(20):
        pids.add((await database.read_one("SELECT pg_backend_pid()"))[0])
        await database.transact_one(one("SELECT 1"))
    assert len(pids) == 1
    assert calls == {"acquire": 1, "release": 0}


async def test_takers_beyond_the_pool_size_wait_and_all_finish(database: PgDatabase) -> None:
    async def slow_read(n: int) -> int:
        row = await database.read_one("SELECT ?::int FROM pg_sleep(0.01)", (n,))
        return int(row[0])

    assert await asyncio.gather(*(slow_read(n) for n in range(12))) == list(range(12))
    rows = await database.read(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'approvals-bot'"
    )
    assert rows[0][0] <= 2


async def test_a_failed_use_gives_the_connection_back_to_the_pool(
    database: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    await database.read("SELECT 1")
    calls = count_pool_calls(database, monkeypatch)
    with pytest.raises(StoreError, match="division by zero"):
        await database.read("SELECT 1 / 0")
    assert calls["release"] == 1
    assert (await database.read_one("SELECT 2"))[0] == 2


async def test_a_cancelled_waiter_loses_no_connection(database: PgDatabase) -> None:
    holding = [await database.connection(), await database.connection()]
    waiter = asyncio.create_task(database.read("SELECT 1"))
    await asyncio.sleep(0)  # it waits: both connections are out
    assert not waiter.done()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    for connection in holding:
        await database.release(connection)
    reads = [database.read_one("SELECT ?::int", (n,)) for n in range(4)]
    assert [row[0] for row in await asyncio.gather(*reads)] == [0, 1, 2, 3]


async def test_a_connection_dropped_while_kept_idle_is_replaced(
    database: PgDatabase, postgres_url: str
) -> None:
    pid = (await database.read_one("SELECT pg_backend_pid()"))[0]
    admin = await asyncpg.connect(postgres_url)
    try:
        await admin.execute("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not _closed(database._connections._idle[0]):  # until the client sees the drop
        assert loop.time() < deadline, "the dropped connection never closed"
        await asyncio.sleep(0.01)
    row = await database.read_one("SELECT pg_backend_pid()")
    assert row[0] != pid


async def test_closing_waits_for_a_use_in_flight_and_gives_its_connection_back(
    postgres_url: str,
) -> None:
    database = await PgDatabase.open(postgres_url, location="test", pool_size=2)
    await database.read("SELECT 1")  # a kept, idle connection
    in_flight = asyncio.create_task(database.read_one("SELECT 7 FROM pg_sleep(0.2)"))
    for _ in range(10_000):  # until it has taken the kept connection
        if not database._connections._idle:
            break
        await asyncio.sleep(0)
    await asyncio.wait_for(database.close(), timeout=30)  # hung: the use kept it
    assert (await in_flight)[0] == 7
