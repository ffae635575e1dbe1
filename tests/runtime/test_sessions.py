"""AgentRuntime: sessions kept by run id, decided by call or execution key, resumed.

The runtime only keeps states and takes decisions on them; the Runner runs the tools
through the journal, so a session resumed twice runs each call once."""

from __future__ import annotations

import pytest

from bot.errors import InputError, ResolutionError, UnknownExecutionKey
from bot.runtime import AgentRuntime, InMemoryJournal, InMemoryRunStates, RunState
from tests.runtime.runtime_support import Ops

DEPLOY = ("deploy_release", {"service": "api", "version": "1.4.2"})
RESTART = ("restart_service", {"service": "worker"})


async def test_approve_with_resume_runs_the_call_and_returns_the_finished_result(
    ops: Ops,
) -> None:
    runtime = AgentRuntime(ops.agent([[DEPLOY], "deployed"]))
    paused = await runtime.run("deploy")
    [pending] = paused.pending
    assert ops.effects == []

    done = await runtime.approve(pending, resume=True, approver_id="U1", reason="CR-7")

    assert done is not None
    assert (done.outcome, done.final_output, done.state) == ("completed", "deployed", None)
    assert [e.tool for e in ops.effects] == ["deploy_release"]
    assert done.to_state().approval_metadata[pending.tool_call_id].approver_id == "U1"


async def test_several_decisions_by_execution_key_then_one_resume(ops: Ops) -> None:
    states = InMemoryRunStates()
    runtime = AgentRuntime(ops.agent([[DEPLOY, RESTART], "done"]), states=states)
    paused = await runtime.run("deploy and restart")
    deploy, restart = paused.pending

    assert await runtime.approve(deploy.execution_key) is None  # stored, not resumed
    assert await runtime.decline(restart, message="not today") is None
    stored = await states.load(paused.run_id)
    assert stored is not None
    assert RunState.from_json(stored).get_interruptions() == []

    done = await runtime.resume(paused.run_id)
    assert done.final_output == "done"
    assert [e.tool for e in ops.effects] == ["deploy_release"]  # the declined one never ran
    again = await runtime.resume(paused.run_id)  # a second resume repeats nothing
    assert again.final_output == "done"
    assert [e.tool for e in ops.effects] == ["deploy_release"]


async def test_a_fresh_runtime_decides_after_loading_the_session_or_by_session_id(
    ops: Ops,
) -> None:
    states, journal = InMemoryRunStates(), InMemoryJournal()
    first = AgentRuntime(ops.agent([[DEPLOY], "ok"]), states=states, journal=journal)
    paused = await first.run("deploy")
    [pending] = paused.pending

    restarted = AgentRuntime(ops.agent([[DEPLOY], "ok"]), states=states, journal=journal)
    with pytest.raises(UnknownExecutionKey, match="session_id="):
        await restarted.approve(pending)
    done = await restarted.approve(pending, session_id=paused.run_id, resume=True)
    assert done is not None
    assert done.final_output == "ok"


async def test_bad_decisions_change_nothing(ops: Ops) -> None:
    states = InMemoryRunStates()
    runtime = AgentRuntime(ops.agent([[DEPLOY], "ok"]), states=states)
    paused = await runtime.run("deploy")
    [pending] = paused.pending
    before = await states.load(paused.run_id)

    with pytest.raises(ResolutionError, match="waits for approval"):
        await runtime.resolve_tool(pending, retry=True)
    with pytest.raises(InputError, match="no session 'nope'"):
        await runtime.resume("nope")
    assert await states.load(paused.run_id) == before
    assert ops.effects == []
