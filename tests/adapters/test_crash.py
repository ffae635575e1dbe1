"""SIGKILL inside an SDK function tool: the process dies after the effect, before its
result is recorded; the restarted service applies the tool's replay policy through the
ledger, as for the bot's own runs (tests/service/test_crash.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.runtime import VerifiedResult
from tests.service.service_harness import Harness, kinds
from tests.service.test_crash import kill_during_tool

pytestmark = pytest.mark.slow


async def test_an_idempotent_sdk_call_reruns_with_the_same_key(
    db_path: Path, effects_path: Path, open_harness: Callable[..., Any]
) -> None:
    [first] = kill_during_tool(db_path, effects_path, "deploy payments 1.2.3", "ops-openai")

    harness: Harness = await open_harness()
    [run] = await harness.store.list_runs(status="resuming")
    assert run.agent_name == "ops-openai"
    assert await harness.service.recover() == 1
    await harness.service.drain()

    first_again, second = harness.effect_lines()
    assert first_again == first
    assert second["execution_key"] == first["execution_key"]
    assert second["duplicate"] is True  # the downstream recognised the key
    done = await harness.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"


async def test_a_manual_sdk_call_ends_uncertain_until_reconciled(
    db_path: Path, effects_path: Path, open_harness: Callable[..., Any]
) -> None:
    [effect] = kill_during_tool(db_path, effects_path, "restart api", "ops-openai")

    harness: Harness = await open_harness()
    [run] = await harness.store.list_runs(status="resuming")
    assert await harness.service.recover() == 1
    await harness.service.drain()

    assert harness.effect_lines() == [effect]  # not run again
    [uncertain] = harness.notifier.uncertain
    assert (uncertain.tool_name, uncertain.execution_key) == (
        "restart_service",
        effect["execution_key"],
    )
    paused = await harness.store.get_run(run.run_id)
    assert paused is not None
    assert paused.status == "paused"

    await harness.service.reconcile(
        run.run_id,
        actor="U-operator",
        resolution=VerifiedResult(result="api restarted at 10:02 (checked)"),
    )
    await harness.service.drain()

    assert harness.effect_lines() == [effect]
    assert "api restarted at 10:02 (checked)" in harness.notifier.answer(run.run_id)
    assert "reconciled" in await kinds(harness, run.run_id)
