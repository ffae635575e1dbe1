from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.models.fake_llm import FakeLLM


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLM]:
    server = FakeLLM()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
