"""The reference RunState listing (the OpenAI Agents SDK's own source), as API usage.

The listing is an implementation, not samples: what a user of it writes is its public
surface, and that is what is honoured here against our RunState:

- `get_interruptions()`, and `approve(item, always_approve=...)` /
  `reject(item, always_reject=...)` by the SDK's keyword names (beside our `always`);
- the `$schemaVersion` stamp of every serialized state;
- the context rules of `_serialize_context_payload`: a mapping is stored as it is; a
  serializer must return a mapping and its failure is an error; strict mode refuses
  anything else; otherwise a `model_dump()` object and a dataclass are kept as data and
  anything else is left out with a warning. Ours takes the serializer pair and the
  strict flag on the Agent (our default is strict; the listing's is not) and refuses a
  credential in what would be stored, which the listing does not;
- restoring with a `context_deserializer` rebuilds the object (ours: on resume).

Not honoured, by design: the listing's `to_json()` returns a dict and its async
`from_json(initial_agent, dict)` needs the agent; ours keeps `to_json()` as JSON text
(its `to_string()`) and `to_dict()` / `from_dict()` for dicts, with the agent matched
when the Runner resumes (docs/api.md). Tracing state is not part of ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from bot.errors import ContextSerializationError, InputError
from bot.runtime import (
    CURRENT_SCHEMA_VERSION,
    Agent,
    Runner,
    RunState,
    ScriptedModel,
    current_tool_call,
    tool,
)

RESTART = ("restart_service", {"service": "api"})


def restarter(ran: list[str], script: list[Any], **options: Any) -> Agent:
    @tool(needs_approval=True)
    def restart_service(service: str) -> str:
        """Restart a service."""
        ran.append(service)
        context = current_tool_call().context
        return f"restarted {service} for {getattr(context, 'tenant_id', context)}"

    return Agent(
        name="ops", instructions="", tools=[restart_service], model=ScriptedModel(script),
        **options,
    )  # fmt: skip


async def test_get_interruptions_lists_what_waits_and_nothing_once_decided() -> None:
    paused = await Runner.arun(restarter([], [[RESTART], "ok"]), "restart api")
    state = paused.to_state()
    [item] = state.get_interruptions()
    assert (item.tool_name, item.arguments) == ("restart_service", {"service": "api"})
    state.approve(item)
    assert state.get_interruptions() == []


async def test_always_approve_lets_later_calls_of_the_tool_run_without_asking() -> None:
    ran: list[str] = []
    agent = restarter(ran, [[RESTART], [RESTART], "done"])
    paused = await Runner.arun(agent, "restart api twice")
    state = paused.to_state()
    state.approve(state.get_interruptions()[0], always_approve=True)
    done = await Runner.arun(agent, state)
    assert (done.outcome, ran) == ("completed", ["api", "api"])


async def test_always_reject_answers_later_calls_without_asking() -> None:
    ran: list[str] = []
    agent = restarter(ran, [[RESTART], [RESTART], "gave up"])
    state = (await Runner.arun(agent, "restart api twice")).to_state()
    state.reject(state.get_interruptions()[0], always_reject=True)
    done = await Runner.arun(agent, state)
    assert (done.outcome, ran) == ("completed", [])


async def test_our_name_and_the_sdk_name_may_not_disagree() -> None:
    state = (await Runner.arun(restarter([], [[RESTART], "ok"]), "go")).to_state()
    [item] = state.get_interruptions()
    with pytest.raises(InputError, match="always= or always_approve="):
        state.approve(item, always=True, always_approve=False)
    with pytest.raises(InputError, match="message= or rejection_message="):
        state.reject(item, message="no", rejection_message="nope")
    assert state.get_interruptions() == [item]  # nothing was decided


async def test_every_serialized_state_names_its_schema_version() -> None:
    state = (await Runner.arun(restarter([], [[RESTART], "ok"]), "go")).to_state()
    assert state.to_dict()["$schemaVersion"] == CURRENT_SCHEMA_VERSION


# -- the context rules -------------------------------------------------------------------


@dataclass
class AppContext:
    tenant_id: str
    api_token: str


def serialize(context: AppContext) -> Mapping[str, Any]:
    return {"tenant_id": context.tenant_id}


def deserialize(payload: Mapping[str, Any]) -> AppContext:
    return AppContext(tenant_id=str(payload["tenant_id"]), api_token="from-the-vault")


async def test_a_mapping_context_is_stored_as_it_is() -> None:
    paused = await Runner.arun(restarter([], [[RESTART], "ok"]), "go", context={"tenant": "t"})
    assert paused.to_state().context == {"tenant": "t"}


async def test_a_serializer_pair_stores_the_durable_part_and_rebuilds_the_object() -> None:
    ran: list[str] = []
    agent = restarter(
        ran, [[RESTART], "ok"], context_serializer=serialize, context_deserializer=deserialize
    )
    paused = await Runner.arun(agent, "go", context=AppContext("tenant-a", "sk-secret-token"))
    text = paused.to_state().to_json()
    assert "sk-secret-token" not in text
    state = RunState.from_json(text)
    state.approve(state.get_interruptions()[0])
    done = await Runner.arun(agent, state)
    assert done.final_output == "ok"
    assert ran == ["api"]
    assert "restarted api for tenant-a" in done.to_state().to_json()  # the rebuilt object


@pytest.mark.parametrize(
    ("serializer", "problem"),
    [
        (lambda context: ["not", "a", "mapping"], "must return a mapping"),
        (lambda context: 1 / 0, "context_serializer failed: ZeroDivisionError"),
    ],
)
async def test_a_serializer_must_return_a_mapping_and_its_failure_is_named(
    serializer: Any, problem: str
) -> None:
    agent = restarter([], [[RESTART], "ok"], context_serializer=serializer)
    with pytest.raises(ContextSerializationError, match=problem):
        await Runner.arun(agent, "go", context=AppContext("t", "x"))


async def test_strict_mode_refuses_an_object_without_a_serializer() -> None:
    with pytest.raises(ContextSerializationError, match="context_serializer= and"):
        await Runner.arun(restarter([], [[RESTART], "ok"]), "go", context=AppContext("t", "x"))


async def test_non_strict_mode_keeps_data_objects_and_leaves_out_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @dataclass
    class Ticket:
        ticket: str

    class Opaque:
        pass

    kept = await Runner.arun(
        restarter([], [[RESTART], "ok"], strict_context=False), "go", context=Ticket("OPS-1")
    )
    assert kept.to_state().context == {"ticket": "OPS-1"}
    dropped = await Runner.arun(
        restarter([], [[RESTART], "ok"], strict_context=False), "go", context=Opaque()
    )
    assert dropped.to_state().context is None
    assert "Opaque is not stored" in caplog.text
