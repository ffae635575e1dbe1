"""Store test fixtures: every engine, a real key ring, a settable clock.

`store` (and `database_url`) are parametrized over the engines: a real SQLite file under
tmp_path, and a real Postgres database created for the one test and dropped after it
(postgres_db.py). Where Postgres cannot be reached the postgres params skip, naming why,
or fail when `CI` is set.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from store import SqliteStore, open_store
from store.crypto import KeyRing
from store.keys import generate_key
from tests.store.postgres_db import fresh_postgres_database
from tests.store.store_helpers import Clock

ENGINES = ("sqlite", "postgres")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def keyring() -> KeyRing:
    return KeyRing([generate_key("k1")])


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "approvals.db"


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(engine: str, db_path: Path) -> Iterator[str]:
    """The URL of an empty database of the test's engine, gone after the test."""
    if engine == "sqlite":
        yield str(db_path)
        return
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
async def store(database_url: str, keyring: KeyRing, clock: Clock) -> AsyncIterator[SqliteStore]:
    opened = await open_store(database_url, keyring=keyring, clock=clock, environ={})
    try:
        yield opened  # type: ignore[misc]
    finally:
        await opened.close()


@pytest.fixture
async def sqlite_store(db_path: Path, keyring: KeyRing, clock: Clock) -> AsyncIterator[SqliteStore]:
    """For what only SQLite has (its file's bytes, its query plans)."""
    opened = await open_store(str(db_path), keyring=keyring, clock=clock, environ={})
    try:
        yield opened  # type: ignore[misc]
    finally:
        await opened.close()
