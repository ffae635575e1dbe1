"""Tests of the adapters with the real frameworks (their extras; CI installs them all):
their scripted models at the LLM edge, and otherwise the real store, service, ledger
and Slack app, as the service tests have them. The tests here are the OpenAI Agents
SDK adapter's; frameworks/ holds LangGraph's and Pydantic AI's.

Outside CI a test whose extra is absent is skipped; under CI (`CI` set) it runs, and
fails: CI installs every extra."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.service.conftest import db_path, effects_path
from tests.service.service_harness import Harness, close_harness, open_service

if importlib.util.find_spec("agents") is None and not os.environ.get("CI"):
    collect_ignore_glob = ["test_*.py"]

__all__ = ["db_path", "effects_path"]  # the service tests' fixtures, shared


@pytest.fixture
async def open_harness(db_path: Path, effects_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Open a service on the test's database (ops and ops-openai unless a registry is
    given); again after a close: a restart."""
    from bot.agents import builtin_registry

    opened: list[Harness] = []

    async def opener(**options: Any) -> Harness:
        options.setdefault("registry", builtin_registry())
        harness = await open_service(db_path, effects_path, **options)
        opened.append(harness)
        return harness

    yield opener
    for harness in opened:
        await close_harness(harness)


@pytest.fixture
async def harness(open_harness: Callable[..., Any]) -> Harness:
    opened: Harness = await open_harness()
    return opened
