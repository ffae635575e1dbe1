"""The production approval architecture reference, run against the run core.

Its samples are written for the OpenAI Agents SDK; the ones whose API the run core
shares run here with only the imports changed (`function_tool` is our `tool`), each
body verbatim inside a small typed function (the only scaffolding). The ones that call
the SDK's own RunState serialization (`to_json(context_serializer=...)` returning a
dict, the async `from_json(initial_agent, ...)`) run against the SDK through our
adapter in test_production_architecture_sdk.py: the run core takes the same serializer
pair on its Agent instead (docs/api.md says why). Its SQL (an approval table, the
compare-and-set update) and the ledger fragment are the store's own business (the
store's approvals and ledger, tests/store); the duplicate-resume experiment they
belong to runs here through our ledger. The context samples (a dataclass, its
serializer pair, the secret manager) are in release_lab.py, shared with the SDK's."""

# ruff: noqa: RET504  (samples end with an assignment; the scaffolding returns it)

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from bot.errors import AgentNotRegisteredError, ContextSerializationError
from bot.runtime import (
    Agent,
    AgentRegistry,
    Runner,
    RunState,
    ScriptedModel,
    legacy_arguments_digest,
)
from bot.runtime import tool as function_tool
from store.api import Store
from store.journal import StoreJournal
from store.states import StoreRunStates
from tests.api.release_lab import (
    DEMO_SECRET,
    AppContext,
    context_deserializer,
    context_serializer,
)

RELEASE = {"release": "2026.07.24", "idempotency_key": "tenant-a:release:2026.07.24"}


# -- the samples' own definitions, verbatim ------------------------------------------------


@function_tool(needs_approval=True)
def deploy_release(release: str, idempotency_key: str) -> str:
    return f"deployed:{release}"


# -- the reader's side: an agent, its effects, where states are kept ---------------------


@dataclass
class Lab:
    """What the samples' reader has around them: the agent (its deploy counted), and the
    run's state kept sealed in a real store, its calls through the store's ledger."""

    store: Store
    effects: list[str] = dataclasses.field(default_factory=list)
    run_id: str = ""

    def agent(self, version: str = "1") -> Agent:
        original = deploy_release.function

        def counted(**arguments: Any) -> str:
            self.effects.append(arguments["release"])
            return str(original(**arguments))

        script = ScriptedModel(
            [[("deploy_release", RELEASE)], "Release workflow finished: deployed:2026.07.24"]
        )
        return Agent(
            name="release-lab",
            version=version,
            instructions="Release when asked.",
            tools=[dataclasses.replace(deploy_release, function=counted)],
            model=script,
            context_serializer=context_serializer,
            context_deserializer=context_deserializer,
        )

    def effect_count(self) -> int:
        return len(self.effects)

    async def persist(self, state: RunState) -> None:
        self.run_id = state.run_id
        await StoreRunStates(self.store).save(state, finished=False)

    async def load_state(self, agent: Agent) -> RunState:
        text = await StoreRunStates(self.store).load(self.run_id)
        assert text is not None
        return RunState.from_json(text)

    def journal(self, worker: str) -> StoreJournal:
        return StoreJournal(self.store, owner=worker)


async def first_run(agent: Agent, runtime_token: str, effect_count: Callable[[], int]) -> RunState:
    result = await Runner.run(
        agent,
        "Deploy release 2026.07.24",
        context=AppContext(
            tenant_id="tenant-a",
            api_token=runtime_token,
        ),
    )

    assert len(result.interruptions) == 1
    assert effect_count() == 0
    state = result.to_state()
    return state


async def approve_and_persist(state: RunState, persist: Callable[[RunState], Any]) -> None:
    interruption = state.get_interruptions()[0]
    state.approve(interruption)
    await persist(state)


async def worker_resumes(agent: Agent, load_state: Callable[[Agent], Any]) -> Any:
    state = await load_state(agent)
    result = await Runner.run(agent, state)
    return result


async def reject_and_resume(agent: Agent, state: RunState) -> Any:
    interruption = state.get_interruptions()[0]
    state.reject(
        interruption,
        rejection_message="Deployment was denied by the release manager.",
    )
    result = await Runner.run(agent, state)
    return result


# -- the lifecycle ---------------------------------------------------------------------------


@pytest.fixture
def lab(store: Store) -> Lab:
    return Lab(store=store)


async def test_the_run_pauses_before_the_effect_and_another_worker_runs_it_once(
    lab: Lab,
) -> None:
    agent = lab.agent()
    state = await first_run(agent, DEMO_SECRET, lab.effect_count)
    assert DEMO_SECRET not in state.to_json()  # the serializer kept the tenant only

    await approve_and_persist(state, lab.persist)
    result = await worker_resumes(lab.agent(), lab.load_state)  # a rebuilt agent

    assert result.final_output == "Release workflow finished: deployed:2026.07.24"
    assert lab.effect_count() == 1
    run = await lab.store.get_run(lab.run_id)
    assert run is not None
    assert run.key_id == "k1"  # stored sealed


async def test_a_rejection_is_the_tool_result_the_model_sees_and_nothing_runs(lab: Lab) -> None:
    agent = lab.agent()
    state = await first_run(agent, DEMO_SECRET, lab.effect_count)
    result = await reject_and_resume(agent, state)

    assert result.outcome == "completed"
    assert lab.effect_count() == 0
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert (
        "Deployment was denied by the release manager."
        in orjson.dumps(model.requests[-1].history).decode()
    )


async def test_replaying_one_approved_state_in_two_workers_runs_the_effect_once(
    lab: Lab,
) -> None:
    agent = lab.agent()
    state = await first_run(agent, DEMO_SECRET, lab.effect_count)
    await approve_and_persist(state, lab.persist)
    approved = await lab.load_state(agent)

    answers = []
    for worker in ("retry-a", "retry-b"):  # redelivered: the same approved snapshot
        again = RunState.from_json(approved.to_json())
        done = await Runner.run(agent, again, journal=lab.journal(worker))
        answers.append(done.final_output)

    assert lab.effect_count() == 1  # the second worker reused the recorded result
    assert answers[0] == answers[1]


# -- the review digest -----------------------------------------------------------------------


def unkeyed_digest(parsed_arguments: dict[str, Any]) -> str:
    canonical_args = json.dumps(
        parsed_arguments,
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )
    arguments_digest = hashlib.sha256(canonical_args.encode()).hexdigest()
    return arguments_digest


async def test_the_canonical_form_is_ours_and_our_card_digest_is_keyed(lab: Lab) -> None:
    arguments = {"release": "2026.07.24", "note": "ünïcode", "idempotency_key": "k"}
    assert unkeyed_digest(arguments) == legacy_arguments_digest(arguments)

    one = await first_run(lab.agent(), DEMO_SECRET, lab.effect_count)
    two = await first_run(lab.agent(), DEMO_SECRET, lab.effect_count)
    [call_one], [call_two] = one.get_interruptions(), two.get_interruptions()
    # keyed with each run's secret key and bound to the call: not guessable from the card
    assert one.call_digest(call_one) != unkeyed_digest(call_one.arguments)
    assert one.call_digest(call_one) != two.call_digest(call_two)


# -- context, secrets and agent versions -----------------------------------------------------


async def test_a_mapping_context_holding_a_secret_is_refused_not_stored() -> None:
    context = {
        "tenant_id": "tenant-a",
        "api_token": DEMO_SECRET,
    }
    agent = Agent(name="lab", instructions="", tools=[deploy_release],
                  model=ScriptedModel([[("deploy_release", RELEASE)], "ok"]))  # fmt: skip
    with pytest.raises(ContextSerializationError) as refused:
        await Runner.run(agent, "Deploy release 2026.07.24", context=context)
    assert "context.api_token" in str(refused.value)
    assert DEMO_SECRET not in str(refused.value)


async def test_a_dataclass_context_without_a_serializer_is_refused_in_strict_mode() -> None:
    agent = Agent(name="lab", instructions="", tools=[deploy_release],
                  model=ScriptedModel([[("deploy_release", RELEASE)], "ok"]))  # fmt: skip
    with pytest.raises(ContextSerializationError, match="context_serializer="):
        await Runner.run(agent, "go", context=AppContext("tenant-a", DEMO_SECRET))


class StateVersionUnsupported(Exception):
    """The reader's own error for a record of an application version it dropped."""


@dataclass
class ApprovalRecordRow:
    app_state_version: str


def pick_agent(
    record: ApprovalRecordRow,
    build_release_agent_v1: Callable[[Any], Agent],
    build_release_agent_v2: Callable[[Any], Agent],
    runtime_dependencies: Any,
) -> Agent:
    AGENT_FACTORIES = {
        "runstate-approval-lab/v1": build_release_agent_v1,
        "runstate-approval-lab/v2": build_release_agent_v2,
    }

    factory = AGENT_FACTORIES.get(record.app_state_version)
    if factory is None:
        raise StateVersionUnsupported(record.app_state_version)
    agent = factory(runtime_dependencies)
    return agent


async def test_agents_are_rebuilt_by_version_and_a_dropped_version_is_refused(lab: Lab) -> None:
    def build_v1(_: Any) -> Agent:
        return lab.agent("1")

    def build_v2(_: Any) -> Agent:
        return lab.agent("2")

    v1 = pick_agent(ApprovalRecordRow("runstate-approval-lab/v1"), build_v1, build_v2, {})
    with pytest.raises(StateVersionUnsupported):
        pick_agent(ApprovalRecordRow("runstate-approval-lab/v0"), build_v1, build_v2, {})

    # the run core does the same by agent name and version, from the state itself
    state = await first_run(v1, DEMO_SECRET, lab.effect_count)
    state.approve(state.get_interruptions()[0])
    with pytest.raises(AgentNotRegisteredError, match="version '1'"):
        await Runner.run(lab.agent("2"), state)
    registry = AgentRegistry([lab.agent("2")])
    with pytest.raises(AgentNotRegisteredError, match="registered: release-lab v2"):
        await Runner.run(None, state, registry=registry)
    assert lab.effect_count() == 0
