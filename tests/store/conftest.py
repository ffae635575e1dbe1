"""Store test fixtures: real SQLite files under tmp_path, a real key ring, a settable clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store import SqliteStore, open_store
from store.crypto import KeyRing
from store.keys import generate_key
from tests.store.store_helpers import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def keyring() -> KeyRing:
    return KeyRing([generate_key("k1")])


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "approvals.db"


@pytest.fixture
async def store(db_path: Path, keyring: KeyRing, clock: Clock) -> AsyncIterator[SqliteStore]:
    opened = await open_store(str(db_path), keyring=keyring, clock=clock, environ={})
    try:
        yield opened
    finally:
        await opened.close()
