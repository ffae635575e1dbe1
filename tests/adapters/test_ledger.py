"""The execution ledger around SDK function tools.

The duplicate-resume experiment: one paused SDK state, approved and resumed twice (two
workers, a retried request). The SDK alone runs the tool twice; through the adapter,
whose approval-needing tools claim their execution key in the ledger first, once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, RunState, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from bot.adapters.openai_agents import OpenAIAgentsEngine
from bot.errors import RunStateError
from bot.runtime import AgentRegistry, ExternalRunState
from store import open_store
from store.api import Store
from store.journal import StoreJournal
from tests.service.service_harness import APPROVER, REQUESTER, Harness

DEPLOY = {"service": "payments", "version": "1.2.3"}


def deploy_agent(effects: list[str], model: ScriptedModel) -> Agent[Any]:
    @function_tool(needs_approval=True)
    async def deploy_release(service: str, version: str) -> str:
        """Deploy a release of a service."""
        effects.append(f"{service} {version}")
        return f"deployed {service} {version}"

    return Agent(name="deployer", instructions="Deploy.", tools=[deploy_release], model=model)


def script(*final_answers: str) -> ScriptedModel:
    return ScriptedModel(
        [
            [function_call("deploy_release", DEPLOY, call_id="call_0")],
            *[[assistant_message(text)] for text in final_answers],
        ]
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(str(tmp_path / "ledger.db"), environ={})
    yield opened
    await opened.close()


async def test_without_the_ledger_a_duplicate_resume_runs_the_tool_twice() -> None:
    effects: list[str] = []
    agent = deploy_agent(effects, script("done", "done"))
    config = RunConfig(tracing_disabled=True)
    paused = (await Runner.run(agent, "deploy", run_config=config)).to_state().to_json()

    for _ in range(2):  # two workers resume the same stored state
        state = await RunState.from_json(agent, paused)
        state.approve(state.get_interruptions()[0])
        await Runner.run(agent, state, run_config=config)

    assert effects == ["payments 1.2.3", "payments 1.2.3"]


async def test_with_the_ledger_a_duplicate_resume_runs_it_once(store: Store) -> None:
    effects: list[str] = []
    engine = OpenAIAgentsEngine(deploy_agent(effects, script("done", "done")), version="1")
    journal = StoreJournal(store, owner="worker-a", lease_seconds=60)
    first = await engine.run(
        engine.new_state("deploy", run_id="run-1"), journal=journal, dependencies={}
    )
    assert first.outcome == "paused"
    paused = first.state.to_json()

    answers = []
    for _ in range(2):  # two workers resume the same stored state
        state = ExternalRunState.from_json(paused)
        [call] = state.get_interruptions()
        state.approve(call, approver_id=APPROVER)
        result = await engine.run(state, journal=journal, dependencies={})
        answers.append(result.final_output)

    assert effects == ["payments 1.2.3"]
    assert answers == ["done", "done"]  # the second resume reused the recorded result
    [entry] = await store.ledger_entries(run_id="run-1")
    assert (entry.state, entry.attempt) == ("succeeded", 1)


async def test_the_restored_call_must_be_the_decided_one(store: Store) -> None:
    effects: list[str] = []
    engine = OpenAIAgentsEngine(deploy_agent(effects, script("done")), version="1")
    journal = StoreJournal(store, owner="worker-a", lease_seconds=60)
    paused = await engine.run(
        engine.new_state("deploy", run_id="run-2"), journal=journal, dependencies={}
    )
    # the SDK's state (its arguments are JSON text inside ours, so escaped) now asks
    # for another version than the call people decided on (our record: a plain object)
    text = paused.state.to_json()
    tampered = text.replace(r"\"version\":\"1.2.3\"", r"\"version\":\"9.9.9\"")
    assert tampered.count("9.9.9") >= 2
    assert '"version":"1.2.3"' in tampered
    state = ExternalRunState.from_json(tampered)
    [call] = state.get_interruptions()
    state.approve(call)

    with pytest.raises(RunStateError, match="not the call people decided on"):
        await engine.run(state, journal=journal, dependencies={})
    assert effects == []


class CallZeroEveryTurn:
    """The SDK model edge of a server that numbers calls call_0 afresh every turn."""

    @staticmethod
    def model() -> ScriptedModel:
        return ScriptedModel(
            [
                [function_call("deploy_release", DEPLOY, call_id="call_0")],
                [function_call("restart_service", {"service": "payments"}, call_id="call_0")],
                [assistant_message("deployed and restarted")],
            ]
        )


def two_tool_engine(effects: list[str]) -> OpenAIAgentsEngine:
    @function_tool(needs_approval=True)
    async def deploy_release(service: str, version: str) -> str:
        """Deploy a release of a service."""
        effects.append(f"deploy {service} {version}")
        return f"deployed {service} {version}"

    @function_tool(needs_approval=True)
    async def restart_service(service: str) -> str:
        """Restart a service."""
        effects.append(f"restart {service}")
        return f"restarted {service}"

    agent: Agent[Any] = Agent(
        name="reuser",
        instructions="Deploy then restart.",
        tools=[deploy_release, restart_service],
        model=CallZeroEveryTurn.model(),
    )
    return OpenAIAgentsEngine(agent, version="1")


async def test_an_sdk_model_reusing_call_0_is_refused_by_the_sdk_itself(
    open_harness: Callable[..., Any],
) -> None:
    # Our approvals are keyed by execution key (tests/service/test_reused_call_ids.py);
    # the SDK refuses a completed call id coming back for another call: the run fails with
    # one line saying so, and nothing of the second turn runs.
    effects: list[str] = []
    harness: Harness = await open_harness(registry=AgentRegistry([two_tool_engine(effects)]))
    run = await harness.service.start_run(
        agent_name="reuser", task="go", requester=REQUESTER, channel="C-ops"
    )
    [deploy] = await harness.pending(run.run_id)
    await harness.service.decide(deploy.approval_id, approve=True, decider=APPROVER, reason="1")
    await harness.service.drain()

    [(run_id, error)] = harness.notifier.failed
    assert run_id == run.run_id
    assert "reused a completed tool call ID" in error
    assert effects == ["deploy payments 1.2.3"]
