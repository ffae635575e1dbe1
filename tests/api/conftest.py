"""The documented run-core API, exercised as its users write it: a real SQLite store
(its ledger and sealed runs) where a sample needs persistence, scripted models at the
LLM edge."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store import open_store
from store.api import Store
from store.crypto import KeyRing
from store.keys import generate_key


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(
        str(tmp_path / "api.db"), keyring=KeyRing([generate_key("k1")]), environ={}
    )
    try:
        yield opened
    finally:
        await opened.close()
