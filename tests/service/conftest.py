"""Service tests: a real SQLite file, the real store, runtime and ops agent; fakes only
at the edges (the LLM is the offline model; the notifier records calls)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.service.service_harness import OPS_TOKEN, Harness, close_harness, open_service


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "approvals.db"


@pytest.fixture
def effects_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects.jsonl"
    monkeypatch.setenv("APPROVALS_DEMO_EFFECTS", str(path))
    monkeypatch.setenv("OPS_API_TOKEN", OPS_TOKEN)
    monkeypatch.delenv("OPS_DEMO_LATENCY", raising=False)
    monkeypatch.delenv("APPROVALS_KEYS", raising=False)
    return path


@pytest.fixture
async def open_harness(db_path: Path, effects_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Open a harness on the test's database file (again after a close: a restart)."""
    opened: list[Harness] = []

    async def opener(**options: Any) -> Harness:
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
