"""Pausing a run through the real service: the worker (another process) stops before
its next step, the tool already running settles, decisions wait, nothing resumes until
the run is released; a decision revoked meanwhile is honoured when it goes on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.errors import AlreadyDecidedError, InputError, NotAuthorizedError
from bot.service.events import RunFailed, RunPaused, RunUnpaused
from tests.service.governance_helpers import Gate, audit_of, gated_registry, policy
from tests.service.service_harness import APPROVER, REQUESTER, Harness, kinds, start


async def paused_mid_turn(
    open_harness: Callable[..., Any], effects_path: Path
) -> tuple[Harness, Harness, Gate, str]:
    """`hold` and `launch` approved; the worker is inside `hold` when an operator (its own
    process) pauses the run; then `hold` finishes and the worker stops before `launch`."""
    gate = Gate()
    worker: Harness = await open_harness(registry=gated_registry(gate, effects_path))
    operator: Harness = await open_harness(
        registry=gated_registry(Gate(), effects_path), surface="cli", worker_id="cli:op:1"
    )
    run = await start(worker, "go")
    for approval in await worker.pending(run.run_id):
        await worker.service.decide(
            approval.approval_id, approve=True, decider=APPROVER, reason="ok"
        )
    await asyncio.wait_for(gate.entered.wait(), timeout=10)

    held = await operator.service.pause_run(run.run_id, actor="alice", reason="incident 42")
    assert (held.held_by, held.hold_reason) == ("alice", "incident 42")
    gate.release.set()
    await worker.service.drain(timeout=10)
    return worker, operator, gate, run.run_id


async def test_a_pause_mid_resume_lets_the_running_tool_settle_and_starts_nothing_new(
    open_harness: Callable[..., Any], effects_path: Path
) -> None:
    worker, operator, gate, run_id = await paused_mid_turn(open_harness, effects_path)

    assert gate.ran == ["hold"]  # `launch` did not start
    stopped = await worker.store.get_run(run_id)
    assert stopped is not None
    assert (stopped.status, stopped.held) == ("paused", True)
    assert worker.notifier.of(RunFailed) == []
    [told] = operator.notifier.of(RunPaused)
    assert (told.actor, told.reason) == ("alice", "incident 42")
    [paused] = await audit_of(worker, run_id, "paused")
    assert (paused["reason"], paused["via"]) == ("incident 42", "cli")

    await worker.service.recover()  # a restart's recovery leaves a paused run alone
    await worker.service.drain(timeout=10)
    assert gate.ran == ["hold"]

    released = await operator.service.unpause_run(run_id, actor="alice")
    assert released.held is False
    await operator.service.drain(timeout=10)
    done = await operator.store.get_run(run_id)
    assert done is not None
    assert done.status == "completed"
    assert gate.ran == ["hold"]  # not run again
    assert operator.effect_lines() == [{"tool": "launch"}]  # `launch` ran here, once
    assert (await kinds(operator, run_id)).count("executed") == 2
    assert len(operator.notifier.of(RunUnpaused)) == 1


async def test_an_approval_revoked_while_paused_keeps_its_call_from_running(
    open_harness: Callable[..., Any], effects_path: Path
) -> None:
    worker, operator, gate, run_id = await paused_mid_turn(open_harness, effects_path)
    [launch] = [a for a in await worker.store.list_approvals(run_id=run_id)
                if a.tool_name == "launch"]  # fmt: skip
    await operator.service.revoke(launch.approval_id, actor=REQUESTER, reason="not now")

    await operator.service.unpause_run(run_id, actor="alice")
    await operator.service.drain(timeout=10)

    assert gate.ran == ["hold"]  # the approval stood when the run stopped; not any more
    assert operator.effect_lines() == []
    done = await operator.store.get_run(run_id)
    assert done is not None
    assert done.status == "completed"
    [refused] = await audit_of(operator, run_id, "execution_refused")
    assert refused["tool"] == "launch"


async def test_a_paused_run_takes_its_decisions_but_waits_for_the_release(
    harness: Harness,
) -> None:
    run = await start(harness, "deploy payments 1.2.3")
    await harness.service.pause_run(run.run_id, actor=REQUESTER, reason="wait for the window")
    [approval] = await harness.pending(run.run_id)

    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")
    await harness.service.drain(timeout=10)
    waiting = await harness.store.get_run(run.run_id)
    assert waiting is not None
    assert (waiting.status, waiting.held) == ("paused", True)
    assert harness.effect_lines() == []

    await harness.service.unpause_run(run.run_id, actor=REQUESTER)
    await harness.service.drain(timeout=10)
    done = await harness.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
    assert len(harness.effect_lines()) == 1


async def test_who_may_pause_and_what_cannot_be(open_harness: Callable[..., Any]) -> None:
    harness: Harness = await open_harness(policy=policy('admins = ["UADMIN"]'))
    run = await start(harness)
    with pytest.raises(NotAuthorizedError, match="requester or an admin may pause"):
        await harness.service.pause_run(run.run_id, actor="UMALLORY", reason="mine")
    [refused] = await audit_of(harness, run.run_id, "refused")
    assert (refused["actor"], refused["action"]) == ("UMALLORY", "pause")
    with pytest.raises(InputError, match="say why"):
        await harness.service.pause_run(run.run_id, actor="UADMIN", reason="  ")
    with pytest.raises(InputError, match="not paused by anyone"):
        await harness.service.unpause_run(run.run_id, actor="UADMIN")

    await harness.service.pause_run(run.run_id, actor="UADMIN", reason="freeze")
    with pytest.raises(InputError, match="already paused by UADMIN: freeze"):
        await harness.service.pause_run(run.run_id, actor=REQUESTER, reason="me too")
    await harness.service.cancel_run(run.run_id, actor="UADMIN", reason="done with it")
    with pytest.raises(AlreadyDecidedError, match="already cancelled"):
        await harness.service.pause_run(run.run_id, actor="UADMIN", reason="late")
