"""Postgres dropping the store's connections (a failover, a network cut, an operator's
pg_terminate_backend) while it reads and writes: every failure is a StoreError, the
store reconnects by itself once the database takes connections again, and nothing
committed is lost."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from bot.errors import StoreError
from store import open_store
from store.crypto import KeyRing
from store.keys import generate_key
from store.postgres.store import PostgresStore
from tests.store.postgres_db import admin_url, fresh_postgres_database
from tests.store.store_helpers import make_run

READERS = 8


async def admin(*statements: str) -> None:
    connection = await asyncpg.connect(admin_url(), timeout=10)
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


def name_of(url: str) -> str:
    return url.partition("?")[0].rpartition("/")[2]


async def drop_connections(url: str, *, refuse: bool) -> None:
    """Terminate every backend of the test's database (its own database only: never the
    shared server); with `refuse`, new connections are refused until `allow`."""
    name = name_of(url)
    statements = [f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'] if refuse else []
    statements.append(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )
    await admin(*statements)


async def allow(url: str) -> None:
    await admin(f'ALTER DATABASE "{name_of(url)}" ALLOW_CONNECTIONS true')


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
async def pg_store(postgres_url: str) -> AsyncIterator[PostgresStore]:
    opened = await open_store(postgres_url, keyring=KeyRing([generate_key("k1")]), environ={})
    assert isinstance(opened, PostgresStore)
    try:
        yield opened
    finally:
        with contextlib.suppress(StoreError):
            await allow(postgres_url)
        await opened.close()


async def busy_reading(store: PostgresStore, run_id: str, stop: asyncio.Event) -> list[str]:
    """Read the run again and again until `stop`; the kinds of failure seen."""
    failures: list[str] = []
    while not stop.is_set():
        try:
            await store.get_run(run_id)
        except StoreError:
            failures.append("StoreError")
        await asyncio.sleep(0)
    return failures


async def test_connections_dropped_mid_read_fail_as_store_errors_and_come_back(
    pg_store: PostgresStore, postgres_url: str
) -> None:
    store = pg_store
    await make_run(store)
    run = await store.get_run("run-1")
    assert run is not None
    stop = asyncio.Event()
    readers = [asyncio.create_task(busy_reading(store, run.run_id, stop)) for _ in range(READERS)]
    await asyncio.sleep(0.2)
    await drop_connections(postgres_url, refuse=True)
    await asyncio.sleep(0.5)
    with pytest.raises(StoreError, match=r"not currently accepting connections|connection"):
        await store.get_run(run.run_id)
    await allow(postgres_url)
    await asyncio.sleep(0.5)
    stop.set()
    results = await asyncio.gather(*readers)  # any exception but StoreError fails here
    assert any(results), "the drop met no read: the test proves nothing"
    again = await store.get_run(run.run_id)
    assert again is not None
    assert again.version == run.version
