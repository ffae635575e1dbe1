"""The production approval architecture reference's SDK samples, through our adapter.

These samples call the OpenAI Agents SDK's own API (its `function_tool`, its RunState's
`from_json(initial_agent, payload, context_deserializer=..., strict_context=True)`), so
their imports stay the SDK's. What is ours: `OpenAIAgentsEngine` takes the same
serializer pair, stores what the SDK's `to_json(context_serializer=...,
strict_context=True)` writes (the sample's `payload`) inside the bot's sealed state,
and that payload is exactly what the sample's worker loads with the SDK. Needs the
`openai-agents` extra (CI installs it)."""

# ruff: noqa: RET504  (samples end with an assignment; the scaffolding returns it)

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunState, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from bot.adapters.openai_agents import OpenAIAgentsEngine
from bot.errors import ContextSerializationError
from bot.runtime import ExternalRunState, InMemoryJournal
from tests.api.release_lab import (
    DEMO_SECRET,
    AppContext,
    context_deserializer,
    context_serializer,
)

RELEASE = {"release": "2026.07.24", "idempotency_key": "tenant-a:release:2026.07.24"}


@function_tool(needs_approval=True)
def deploy_release(release: str, idempotency_key: str) -> str:
    return f"deployed:{release}"


def lab_engine() -> OpenAIAgentsEngine:
    model = ScriptedModel(
        [
            [function_call("deploy_release", RELEASE, call_id="call_0")],
            [assistant_message("Release workflow finished: deployed:2026.07.24")],
        ]
    )
    agent = Agent(name="release-lab", instructions="Release.", tools=[deploy_release], model=model)
    return OpenAIAgentsEngine(
        agent,
        context_serializer=context_serializer,
        context_deserializer=context_deserializer,
    )


async def load_in_another_process(
    initial_agent: Agent[Any], wrapper: dict[str, Any]
) -> RunState[Any, Any]:
    state = await RunState.from_json(
        initial_agent,
        wrapper["sdk_state"],
        context_deserializer=context_deserializer,
        strict_context=True,
    )
    return state


async def test_the_bot_stores_the_sdk_payload_the_sample_worker_loads() -> None:
    engine, journal = lab_engine(), InMemoryJournal()
    start = engine.new_state(
        "Deploy release 2026.07.24",
        run_id="run-1",
        context=AppContext(tenant_id="tenant-a", api_token=DEMO_SECRET),
    )
    paused = await engine.run(start, journal=journal, dependencies={})
    stored = paused.state.to_json()
    assert DEMO_SECRET not in stored  # safe_serializer_secret_present = false

    kept = ExternalRunState.from_json(stored)
    payload = kept.engine_state["paused"]
    wrapper = {
        "app_state_version": "runstate-approval-lab/v1",
        "sdk_state": payload,
    }
    state = await load_in_another_process(engine.sdk_agent, wrapper)
    [interruption] = state.get_interruptions()
    assert interruption.tool_name == "deploy_release"

    kept.approve(kept.get_interruptions()[0], approver_id="U-RM", reason="change window")
    done = await engine.run(kept, journal=journal, dependencies={})
    assert done.final_output == "Release workflow finished: deployed:2026.07.24"


async def test_a_mapping_context_with_a_token_is_refused_rather_than_stored() -> None:
    context = {
        "tenant_id": "tenant-a",
        "api_token": DEMO_SECRET,
    }
    with pytest.raises(ContextSerializationError) as refused:
        lab_engine().new_state("Deploy release 2026.07.24", run_id="run-2", context=context)
    assert DEMO_SECRET not in str(refused.value)
