"""The stand-in Slack in this process (port 0), with a fresh token and signing secret."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.devconsole import DevConsole, Secrets, Workspace


@pytest.fixture
def shared() -> Secrets:
    return Secrets.generate()


@pytest.fixture
async def console(shared: Secrets) -> AsyncIterator[DevConsole]:
    async with DevConsole(workspace=Workspace(), shared=shared, port=0).running() as running:
        yield running
