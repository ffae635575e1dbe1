"""An SDK agent's run context: a dataclass stored through the engine's serializer pair.

The durable fields are stored, the secret is not: the deserializer re-injects it from
where it lives whenever the run is rebuilt (a fresh start, a resume after approval)."""

from __future__ import annotations

import pytest
from agents import Agent, RunContextWrapper, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from bot.adapters.openai_agents import OpenAIAgentsEngine
from bot.errors import ConfigError, ContextSerializationError
from bot.runtime import ExternalRunState, InMemoryJournal
from tests.api.release_lab import (
    DEMO_SECRET,
    AppContext,
    context_deserializer,
    context_serializer,
)


def release_agent(seen: list[AppContext]) -> Agent[AppContext]:
    @function_tool(needs_approval=True)
    async def deploy_release(ctx: RunContextWrapper[AppContext], release: str) -> str:
        """Deploy a release."""
        seen.append(ctx.context)
        return f"deployed:{release}"

    model = ScriptedModel(
        [
            [function_call("deploy_release", {"release": "2026.07.24"}, call_id="call_0")],
            [assistant_message("Release workflow finished")],
        ]
    )
    return Agent(name="releaser", instructions="Release.", tools=[deploy_release], model=model)


def engine_for(seen: list[AppContext]) -> OpenAIAgentsEngine:
    return OpenAIAgentsEngine(
        release_agent(seen),
        context_serializer=context_serializer,
        context_deserializer=context_deserializer,
    )


async def test_the_secret_is_never_stored_and_the_deserializer_brings_it_back() -> None:
    seen: list[AppContext] = []
    engine, journal = engine_for(seen), InMemoryJournal()
    start = engine.new_state("deploy", run_id="run-1", context=AppContext("tenant-a", DEMO_SECRET))
    assert DEMO_SECRET not in start.to_json()

    paused = await engine.run(start, journal=journal, dependencies={})
    assert paused.outcome == "paused"
    stored = paused.state.to_json()
    assert DEMO_SECRET not in stored
    assert '"tenant_id":"tenant-a"' in stored

    state = ExternalRunState.from_json(stored)  # another process: only the stored text
    state.approve(state.get_interruptions()[0])
    done = await engine.run(state, journal=journal, dependencies={})

    assert done.final_output == "Release workflow finished"
    assert seen == [AppContext("tenant-a", DEMO_SECRET)]  # rebuilt, secret re-injected
    assert DEMO_SECRET not in done.state.to_json()


async def test_without_a_serializer_a_dataclass_is_refused_naming_the_parameters() -> None:
    engine = OpenAIAgentsEngine(release_agent([]))
    with pytest.raises(ContextSerializationError) as refused:
        engine.new_state("deploy", run_id="run-2", context=AppContext("tenant-a", DEMO_SECRET))
    assert "give OpenAIAgentsEngine context_serializer= and context_deserializer=" in str(
        refused.value
    )
    assert DEMO_SECRET not in str(refused.value)


def test_the_pair_is_given_together() -> None:
    with pytest.raises(ConfigError, match="together"):
        OpenAIAgentsEngine(release_agent([]), context_serializer=context_serializer)


async def test_a_serializer_that_keeps_the_secret_is_refused_before_the_run() -> None:
    engine = OpenAIAgentsEngine(
        release_agent([]),
        context_serializer=lambda context: {"tenant_id": "t", "api_token": context.api_token},
        context_deserializer=context_deserializer,
    )
    with pytest.raises(ContextSerializationError, match=r"context\.api_token") as refused:
        engine.new_state("deploy", run_id="run-3", context=AppContext("tenant-a", DEMO_SECRET))
    assert DEMO_SECRET not in str(refused.value)


async def test_a_secret_a_tool_put_in_the_context_is_refused_at_the_pause() -> None:
    @function_tool
    async def log_in(ctx: RunContextWrapper[dict[str, str]]) -> str:
        """Log in."""
        ctx.context["api_token"] = DEMO_SECRET
        return "logged in"

    @function_tool(needs_approval=True)
    async def deploy_release(release: str) -> str:
        """Deploy a release."""
        return f"deployed:{release}"

    model = ScriptedModel(
        [[function_call("log_in", {}, call_id="c0"), function_call("deploy_release",
          {"release": "1"}, call_id="c1")], [assistant_message("done")]]
    )  # fmt: skip
    engine = OpenAIAgentsEngine(
        Agent(name="leaky", instructions="", tools=[log_in, deploy_release], model=model)
    )
    start = engine.new_state("deploy", run_id="run-4", context={"tenant_id": "tenant-a"})
    with pytest.raises(ContextSerializationError, match=r"context\.api_token") as refused:
        await engine.run(start, journal=InMemoryJournal(), dependencies={})
    assert DEMO_SECRET not in str(refused.value)
