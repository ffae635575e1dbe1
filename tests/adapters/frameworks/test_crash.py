"""SIGKILL around an ops-langgraph or ops-pydantic run: between its pause and the
decision (the decision lands after the restart, the call runs once), and inside an
approved tool after its effect (the restarted service applies the tool's replay policy
through the ledger, as for the bot's own runs: tests/service/test_crash.py)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.runtime import VerifiedResult
from tests.adapters.frameworks.support import AGENTS
from tests.service.service_harness import APPROVER, OPS_TOKEN, Harness, kinds
from tests.service.test_crash import DEADLINE_SECONDS, PROJECT_ROOT, kill_during_tool

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("agent", AGENTS)]


def kill_after_pause(db_path: Path, effects: Path, task: str, agent: str) -> str:
    """Run the pause worker until its run paused, SIGKILL it; the paused run's id."""
    env = {**os.environ, "APPROVALS_DEMO_EFFECTS": str(effects), "OPS_API_TOKEN": OPS_TOKEN}
    env.pop("APPROVALS_KEYS", None)
    module = "tests.adapters.frameworks.pause_worker"
    with subprocess.Popen(
        [sys.executable, "-m", module, str(db_path), task, agent],
        env=env,
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as worker:
        try:
            assert worker.stdout is not None
            ready, _, _ = select.select([worker.stdout], [], [], DEADLINE_SECONDS)
            line = worker.stdout.readline().decode() if ready else ""
        finally:
            worker.send_signal(signal.SIGKILL)
            _, err = worker.communicate(timeout=DEADLINE_SECONDS)
    assert line.startswith("paused "), err.decode()
    assert worker.returncode == -signal.SIGKILL
    return line.split()[1]


async def test_killed_between_pause_and_decision_it_runs_once_approved_after_restart(
    db_path: Path, effects_path: Path, open_harness: Callable[..., Any], agent: str
) -> None:
    run_id = kill_after_pause(db_path, effects_path, "deploy payments 1.2.3", agent)

    harness: Harness = await open_harness()
    await harness.service.recover()
    [approval] = await harness.pending(run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="go")
    await harness.service.drain()

    [line] = harness.effect_lines()
    assert line["execution_key"] == approval.execution_key
    done = await harness.store.get_run(run_id)
    assert done is not None
    assert done.status == "completed"


async def test_killed_in_an_idempotent_call_it_reruns_with_the_same_key(
    db_path: Path, effects_path: Path, open_harness: Callable[..., Any], agent: str
) -> None:
    [first] = kill_during_tool(db_path, effects_path, "deploy payments 1.2.3", agent)

    harness: Harness = await open_harness()
    [run] = await harness.store.list_runs(status="resuming")
    assert run.agent_name == agent
    assert await harness.service.recover() == 1
    await harness.service.drain()

    first_again, second = harness.effect_lines()
    assert first_again == first
    assert second["execution_key"] == first["execution_key"]
    assert second["duplicate"] is True  # the downstream recognised the key: one effect
    done = await harness.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"


async def test_killed_in_a_manual_call_it_ends_uncertain_until_reconciled(
    db_path: Path, effects_path: Path, open_harness: Callable[..., Any], agent: str
) -> None:
    [effect] = kill_during_tool(db_path, effects_path, "restart api", agent)

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
