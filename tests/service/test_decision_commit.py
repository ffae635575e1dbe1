"""A decision is durable before anyone is told it was taken: `record_*` commits, and
`finish()` does what follows (card, resume). A process killed in between loses nothing:
at the next start, recovery updates the card and resumes the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.errors import AlreadyDecidedError
from bot.service.events import ApprovalDecided, RunFinished
from tests.service.service_harness import APPROVER, OPS_TOKEN, REQUESTER, Harness, kinds, start

WORKER = "tests.service.record_worker"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEADLINE_SECONDS = 30.0


async def test_the_vote_is_committed_before_finish_and_finish_settles_it(
    harness: Harness,
) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    recorded = await harness.service.record_decision(
        approval.approval_id, approve=True, decider=APPROVER, reason="ship it"
    )
    assert recorded.approval.status == "approved"
    stored = await harness.store.get_approval(approval.approval_id)
    assert stored is not None
    assert (stored.status, stored.decider) == ("approved", APPROVER)
    assert harness.notifier.of(ApprovalDecided) == []  # nothing told yet
    paused = await harness.store.get_run(run.run_id)
    assert paused is not None
    assert paused.status == "paused"

    result = await recorded.finish()
    assert result.resume_started
    await harness.service.drain()
    assert [e.approval.status for e in harness.notifier.of(ApprovalDecided)] == ["approved"]
    assert "payments" in harness.notifier.answer(run.run_id)


async def test_a_refusal_the_store_answers_is_raised_by_finish(harness: Harness) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="a")
    with pytest.raises(AlreadyDecidedError):  # closed before the store: raised at once
        await harness.service.record_decision(
            approval.approval_id, approve=False, decider="U-other", reason="b"
        )
    await harness.service.drain()


async def test_a_revocation_is_committed_before_finish(harness: Harness) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    recorded = await harness.service.record_revocation(
        approval.approval_id, actor=REQUESTER, reason="wrong service"
    )
    stored = await harness.store.get_approval(approval.approval_id)
    assert stored is not None
    assert stored.status == "revoked"
    assert harness.notifier.of(ApprovalDecided) == []
    assert (await recorded.finish()).status == "revoked"
    await harness.service.drain()
    assert harness.effect_lines() == []
    assert [status for _, _, status in harness.notifier.finished] == ["completed"]


def kill_after_record(db_path: Path, effects: Path) -> tuple[str, str]:
    """Run record_worker.py until it has committed its vote, SIGKILL it; return the run
    and approval ids it printed."""
    env = {**os.environ, "APPROVALS_DEMO_EFFECTS": str(effects), "OPS_API_TOKEN": OPS_TOKEN}
    env.pop("APPROVALS_KEYS", None)
    with subprocess.Popen(
        [sys.executable, "-m", WORKER, str(db_path)],
        env=env,
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as worker:
        try:
            assert worker.stdout is not None
            line = worker.stdout.readline().decode()  # blocks until the worker says so
            assert line.startswith("recorded "), worker.stderr and worker.stderr.read()
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.communicate(timeout=DEADLINE_SECONDS)
    assert worker.returncode == -signal.SIGKILL
    run_id, approval_id = line.split()[1:]
    return run_id, approval_id


@pytest.mark.slow
async def test_killed_between_commit_and_finish_the_restart_updates_the_card_and_resumes(
    db_path: Path, effects_path: Path, open_harness: Callable[..., Any]
) -> None:
    run_id, approval_id = kill_after_record(db_path, effects_path)

    harness: Harness = await open_harness()
    stored = await harness.store.get_approval(approval_id)
    assert stored is not None
    assert stored.status == "approved"
    assert await harness.service.recover() == 1
    await harness.service.drain()
    [decided] = harness.notifier.of(ApprovalDecided)  # the card shows the decision now
    assert decided.approval.approval_id == approval_id
    [finished] = harness.notifier.of(RunFinished)
    assert finished.run.run_id == run_id
    assert [line["tool"] for line in harness.effect_lines()] == ["deploy_release"]
    assert (await kinds(harness, run_id)).count("executed") == 1
