"""The Pydantic AI adapter on agents built as Pydantic AI users build them: a tool that
raises ApprovalRequired itself, an ApprovalRequiredToolset around a toolset, the
duplicate resume (Pydantic AI alone runs the approved tool twice, through the bot once),
the run ids of each resume correlated to ours, what registration refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigError
from bot.runtime import ExternalRunState, InMemoryJournal
from store import open_store
from store.journal import StoreJournal
from tests.adapters.frameworks.support import installed, needs

pytestmark = needs("pydantic_ai")
if installed("pydantic_ai"):
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.exceptions import ApprovalRequired
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset

DEPLOY = {"service": "payments", "version": "1.2.3"}


def deploy_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Ask for the deploy once; then answer with what the tool said."""
    if len([m for m in messages if isinstance(m, ModelResponse)]) == 0:
        return ModelResponse(parts=[ToolCallPart("deploy_release", DEPLOY, tool_call_id="c1")])
    said = [
        str(getattr(part, "content", ""))
        for message in messages
        for part in message.parts
        if getattr(part, "part_kind", "") == "tool-return"
    ]
    return ModelResponse(parts=[TextPart("; ".join(said) or "nothing")])


def deploy_agent(effects: list[str], *, raises: bool = False) -> Agent[None, Any]:
    agent: Agent[None, Any] = Agent(
        FunctionModel(deploy_then_answer), name="deployer", output_type=[str, DeferredToolRequests]
    )

    @agent.tool(requires_approval=not raises)
    async def deploy_release(ctx: RunContext[None], service: str, version: str) -> str:
        """Deploy a release."""
        if raises and not ctx.tool_call_approved:
            raise ApprovalRequired
        effects.append(f"{service} {version}")
        return f"deployed {service} {version}"

    return agent


async def test_without_the_ledger_a_duplicate_resume_runs_the_tool_twice() -> None:
    effects: list[str] = []
    agent = deploy_agent(effects)
    paused = await agent.run("deploy")
    assert isinstance(paused.output, DeferredToolRequests)
    history = paused.all_messages()

    for _ in range(2):  # two workers resume the same stored history
        await agent.run(
            message_history=history,
            deferred_tool_results=DeferredToolResults(approvals={"c1": True}),
        )

    assert effects == ["payments 1.2.3", "payments 1.2.3"]


@pytest.mark.parametrize("raises", [False, True], ids=["requires_approval", "ApprovalRequired"])
async def test_with_the_ledger_a_duplicate_resume_runs_it_once(
    raises: bool, tmp_path: Path
) -> None:
    from bot.adapters.pydantic_ai import PydanticAIEngine

    effects: list[str] = []
    engine = PydanticAIEngine(deploy_agent(effects, raises=raises))
    store = await open_store(str(tmp_path / "ledger.db"), environ={})
    try:
        journal = StoreJournal(store, owner="worker-a", lease_seconds=60)
        first = await engine.run(
            engine.new_state("deploy", run_id="run-1"), journal=journal, dependencies={}
        )
        assert first.outcome == "paused"
        assert effects == []  # paused before the effect
        paused = first.state.to_json()

        answers = []
        for _ in range(2):
            state = ExternalRunState.from_json(paused)
            state.approve(state.get_interruptions()[0], approver_id="U1")
            answers.append((await engine.run(state, journal=journal, dependencies={})).final_output)

        assert effects == ["payments 1.2.3"]
        assert answers == ["deployed payments 1.2.3"] * 2  # the second reused the record
        [entry] = await store.ledger_entries(run_id="run-1")
        assert (entry.state, entry.attempt) == ("succeeded", 1)
    finally:
        await store.close()


async def test_an_approval_required_toolset_pauses_its_calls() -> None:
    from bot.adapters.pydantic_ai import PydanticAIEngine

    effects: list[str] = []
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain
    async def deploy_release(service: str, version: str) -> str:
        """Deploy a release."""
        effects.append(f"{service} {version}")
        return f"deployed {service} {version}"

    agent: Agent[None, Any] = Agent(
        FunctionModel(deploy_then_answer),
        name="gated",
        output_type=[str, DeferredToolRequests],
        toolsets=[ApprovalRequiredToolset(toolset)],
    )
    engine = PydanticAIEngine(agent, replay_policies={"deploy_release": "idempotent"})
    assert engine.tool_names() == ["deploy_release"]  # found inside the wrapper

    paused = await engine.run(
        engine.new_state("go", run_id="r2"), journal=InMemoryJournal(), dependencies={}
    )
    [call] = paused.interruptions
    assert (call.tool_name, call.arguments, effects) == ("deploy_release", DEPLOY, [])


async def test_each_resume_has_its_own_run_id_and_our_run_id_names_them_all() -> None:
    from bot.adapters.pydantic_ai import build_ops_pydantic_agent
    from bot.demo import ops_dependencies

    engine = build_ops_pydantic_agent()
    journal = InMemoryJournal()
    paused = await engine.run(
        engine.new_state("restart payments", run_id="our-run-7"),
        journal=journal,
        dependencies=ops_dependencies(),
    )
    state = ExternalRunState.from_json(paused.state.to_json())
    state.reject(state.get_interruptions()[0], message="No.")
    done = await engine.run(state, journal=journal, dependencies=ops_dependencies())

    assert isinstance(done.state, ExternalRunState)
    saved: Any = done.state.engine_state
    first, second = saved["run_ids"]
    assert first != second
    messages = saved["messages"]
    assert {m["conversation_id"] for m in messages} == {"our-run-7"}
    assert {m["run_id"] for m in messages} == {first, second}


def test_registration_refuses_an_agent_that_cannot_pause() -> None:
    from bot.adapters.pydantic_ai import PydanticAIEngine

    agent: Agent[None, str] = Agent(FunctionModel(deploy_then_answer), name="plain")
    with pytest.raises(ConfigError, match="output_type must include DeferredToolRequests"):
        PydanticAIEngine(agent)
