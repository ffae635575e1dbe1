"""A run's result says what to store, and a run can be asked to pause from outside.

`RunResult.state` is set only while the run waits (paused); `to_state()` always has it.
A pause asked for through a PauseSignal stops the run before its next model turn or
tool call: a tool already running finishes and its result is kept, nothing new starts,
and the paused state resumes like any other."""

from __future__ import annotations

import asyncio

from bot.runtime import Agent, PauseSignal, Runner, RunState, ScriptedModel, tool
from tests.runtime.runtime_support import Ops

DEPLOY = ("deploy_release", {"service": "api", "version": "1.4.2"})
STATUS = ("get_status", {"service": "api"})


async def test_a_finished_run_has_no_state_to_store_as_pending(ops: Ops) -> None:
    done = await Runner.arun(ops.agent([[STATUS], "healthy"]), "how is api?")
    assert (done.outcome, done.state) == ("completed", None)
    assert done.to_state().final_output == "healthy"  # still there for a follow-up

    stopped = await Runner.arun(ops.agent([[STATUS], [STATUS], "late"]), "go", max_turns=1)
    assert (stopped.outcome, stopped.state) == ("max_turns", None)
    resumed = await Runner.arun(ops.agent([[STATUS], [STATUS], "late"]), stopped.to_state(),
                                max_turns=3)  # fmt: skip
    assert resumed.final_output == "late"


async def test_a_paused_run_has_its_state_and_pending_calls(ops: Ops) -> None:
    paused = await Runner.arun(ops.agent([[DEPLOY], "ok"]), "deploy")
    assert paused.state is paused.to_state()
    assert paused.pending == paused.interruptions
    [call] = paused.pending
    assert (call.status, call.call.name, call.call.input) == (
        "approval",
        "deploy_release",
        {"service": "api", "version": "1.4.2"},
    )
    assert call.call.id == call.tool_call_id


async def test_runner_run_is_arun(ops: Ops) -> None:
    paused = await Runner.run(ops.agent([[DEPLOY], "ok"]), "deploy")
    assert paused.outcome == "paused"


async def test_a_pause_asked_during_a_tool_lets_it_finish_and_starts_nothing_new() -> None:
    pause = PauseSignal()
    started, release = asyncio.Event(), asyncio.Event()
    ran: list[str] = []

    @tool
    async def slow_check(service: str) -> str:
        ran.append(f"check {service}")
        started.set()
        await release.wait()
        return f"{service} ok"

    @tool
    async def restart(service: str) -> str:
        ran.append(f"restart {service}")
        return "restarted"

    script = ScriptedModel(
        [[("slow_check", {"service": "api"}), ("restart", {"service": "api"})], "all done"]
    )
    agent = Agent(name="ops", instructions="", tools=[slow_check, restart], model=script)
    running = asyncio.create_task(Runner.arun(agent, "check then restart", pause=pause))
    await started.wait()
    pause.request()
    release.set()
    held = await running

    assert (held.outcome, held.interruptions) == ("paused", [])
    assert ran == ["check api"]  # the running tool settled; the next call did not start
    assert held.state is not None
    state = RunState.from_json(held.state.to_json())
    assert [o.call["name"] for o in state.outstanding_calls()] == ["restart"]

    pause.clear()
    resumed = await Runner.arun(agent, state, pause=pause)
    assert (resumed.outcome, resumed.final_output) == ("completed", "all done")
    assert ran == ["check api", "restart api"]  # each call once


async def test_a_pause_asked_before_a_model_turn_stops_before_it(ops: Ops) -> None:
    pause = PauseSignal()
    pause.request()
    model = ScriptedModel([[STATUS], "ok"])
    agent = Agent(name="ops", instructions="", tools=ops.tools, model=model)
    held = await Runner.arun(agent, "how is api?", pause=pause)
    assert (held.outcome, held.interruptions, model.requests) == ("paused", [], [])
    assert held.state is not None
    assert held.state.history == [{"type": "user", "content": "how is api?"}]
