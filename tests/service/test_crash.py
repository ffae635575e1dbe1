"""The process dies while an approved tool runs; a restarted service finishes the run.

A real service process (crash_worker.py) is killed with SIGKILL inside the tool's
latency window: the downstream effect happened, its result was never recorded. The
restarted service (same installation worker id, so it takes over its own dead lease at
once) recovers the run under the tool's replay policy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.runtime import VerifiedResult
from tests.service.service_harness import OPS_TOKEN, Harness, kinds

WORKER = "tests.service.crash_worker"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEADLINE_SECONDS = 30.0

pytestmark = pytest.mark.slow


def kill_during_tool(
    db_path: Path, effects: Path, task: str, agent: str | None = None
) -> list[dict[str, Any]]:
    """Run the worker until the tool's effect is visible, SIGKILL it, and return the
    effect lines written before the kill."""
    env = {
        **os.environ,
        "APPROVALS_DEMO_EFFECTS": str(effects),
        "OPS_DEMO_LATENCY": "120",
        "OPS_API_TOKEN": OPS_TOKEN,
    }
    env.pop("APPROVALS_KEYS", None)
    with subprocess.Popen(
        [sys.executable, "-m", WORKER, str(db_path), task, *([agent] if agent else [])],
        env=env,
        cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as worker:
        try:
            deadline = time.monotonic() + DEADLINE_SECONDS
            while not (effects.exists() and effects.read_text().strip()):
                if worker.poll() is not None:
                    _, err = worker.communicate()
                    pytest.fail(f"worker exited early ({worker.returncode}): {err.decode()}")
                if time.monotonic() > deadline:
                    pytest.fail("the tool's effect never appeared")
                time.sleep(0.01)  # polling the effects file, bounded by the deadline
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.communicate(timeout=DEADLINE_SECONDS)
    assert worker.returncode == -signal.SIGKILL
    return [json.loads(line) for line in effects.read_text().splitlines()]


async def test_an_idempotent_call_reruns_with_the_same_key(
    db_path: Path, effects_path: Path, open_harness: Callable[..., Any]
) -> None:
    [first] = kill_during_tool(db_path, effects_path, "deploy payments 1.2.3")

    harness: Harness = await open_harness()
    [run] = await harness.store.list_runs(status="resuming")
    assert await harness.service.recover() == 1
    await harness.service.drain()

    first_again, second = harness.effect_lines()
    assert first_again == first
    assert second["execution_key"] == first["execution_key"]
    assert second.get("duplicate") is True  # the downstream recognised the key
    done = await harness.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
    assert "payments" in harness.notifier.answer(run.run_id)
    assert (await kinds(harness, run.run_id)).count("executed") == 1


async def test_a_manual_call_ends_uncertain_and_people_are_told(
    db_path: Path, effects_path: Path, open_harness: Callable[..., Any]
) -> None:
    [effect] = kill_during_tool(db_path, effects_path, "restart api")

    harness: Harness = await open_harness()
    [run] = await harness.store.list_runs(status="resuming")
    assert await harness.service.recover() == 1
    await harness.service.drain()

    assert harness.effect_lines() == [effect]  # not run again
    [uncertain] = harness.notifier.uncertain
    assert uncertain.tool_name == "restart_service"
    paused = await harness.store.get_run(run.run_id)
    assert paused is not None
    assert paused.status == "paused"
    assert "uncertain" in await kinds(harness, run.run_id)
    assert await harness.service.recover() == 0  # waits for a human, not for recovery

    await harness.service.reconcile(
        run.run_id,
        actor="U-operator",
        resolution=VerifiedResult(result="api restarted at 10:02 (checked)"),
    )
    await harness.service.drain()
    assert harness.effect_lines() == [effect]
    assert "api restarted at 10:02 (checked)" in harness.notifier.answer(run.run_id)
    assert "reconciled" in await kinds(harness, run.run_id)
