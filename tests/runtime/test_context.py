"""The run context crosses the wire only through a serializer, and never with a secret."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.errors import ContextSerializationError
from bot.runtime import Runner, RunState, current_tool_call, tool
from tests.runtime.runtime_support import Ops

DEPLOY = ("deploy_release", {"service": "api", "version": "1.4.2"})


@dataclass
class Ticket:
    ticket: str
    channel: str


async def test_a_mapping_context_round_trips_and_reaches_tools(ops: Ops) -> None:
    seen: list[Any] = []

    @tool
    def whoami() -> str:
        seen.append(current_tool_call().context)
        return "ok"

    agent = ops.agent([[("whoami", {})], "ok"])
    agent = type(agent)(name="ops", instructions="", tools=[whoami], model=agent.model)
    result = await Runner.arun(agent, "go", context={"ticket": "OPS-1", "channel": "C1"})
    assert seen == [{"ticket": "OPS-1", "channel": "C1"}]
    assert RunState.from_json(result.to_state().to_json()).context == {
        "ticket": "OPS-1",
        "channel": "C1",
    }


async def test_strict_mode_refuses_an_object_without_a_serializer(ops: Ops) -> None:
    with pytest.raises(ContextSerializationError, match=r"type Ticket cannot be stored.*strict"):
        await Runner.arun(ops.agent([[DEPLOY], "ok"]), "go", context=Ticket("OPS-1", "C1"))
    assert ops.effects == []


async def test_non_strict_mode_stores_dataclasses_as_dicts_and_drops_the_rest(ops: Ops) -> None:
    agent = ops.agent([[DEPLOY], "ok"], strict_context=False)
    result = await Runner.arun(agent, "go", context=Ticket("OPS-1", "C1"))
    assert result.to_state().context == {"ticket": "OPS-1", "channel": "C1"}
    dropped = await Runner.arun(
        ops.agent([[DEPLOY], "ok"], strict_context=False), "go", context=object()
    )
    assert dropped.to_state().context is None


async def test_non_strict_mode_keeps_a_pydantic_context_through_model_dump(
    ops: Ops, caplog: pytest.LogCaptureFixture
) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Request(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        ticket: str
        opened: datetime

    opened = datetime(2026, 11, 30, 9, 15, tzinfo=UTC)
    agent = ops.agent([[DEPLOY], "ok"], strict_context=False)
    result = await Runner.arun(agent, "go", context=Request(ticket="OPS-1", opened=opened))
    stored = RunState.from_json(result.to_state().to_json()).context
    assert stored == {"ticket": "OPS-1", "opened": "2026-11-30T09:15:00Z"}  # JSON mode
    assert "model_dump" in caplog.text


async def test_a_model_dump_without_a_mode_is_called_plainly(ops: Ops) -> None:
    class Legacy:
        def model_dump(self) -> dict[str, str]:
            return {"ticket": "OPS-2"}

    agent = ops.agent([[DEPLOY], "ok"], strict_context=False)
    result = await Runner.arun(agent, "go", context=Legacy())
    assert result.to_state().context == {"ticket": "OPS-2"}


async def test_strict_mode_names_the_parameters_that_would_store_the_object(ops: Ops) -> None:
    with pytest.raises(ContextSerializationError) as caught:
        await Runner.arun(ops.agent([[DEPLOY], "ok"]), "go", context=Ticket("OPS-1", "C1"))
    assert "context_serializer= and context_deserializer=" in str(caught.value)


async def test_the_agents_serializer_and_deserializer_restore_the_object(ops: Ops) -> None:
    agent = ops.agent(
        [[DEPLOY], "ok"],
        context_serializer=lambda t: {"ticket": t.ticket, "channel": t.channel},
        context_deserializer=lambda d: Ticket(**d),
    )
    paused = await Runner.arun(agent, "go", context=Ticket("OPS-1", "C1"))
    state = RunState.from_json(paused.to_state().to_json())
    assert state.context == {"ticket": "OPS-1", "channel": "C1"}
    state.approve(state.get_interruptions()[0])

    seen: list[Any] = []

    @tool(needs_approval=True)
    def deploy_release(service: str, version: str) -> str:
        seen.append(current_tool_call().context)
        return "ok"

    resumed_agent = type(agent)(
        name="ops",
        instructions="",
        tools=[deploy_release],
        model=agent.model,
        context_serializer=agent.context_serializer,
        context_deserializer=agent.context_deserializer,
    )
    await Runner.arun(resumed_agent, state)
    assert seen == [Ticket("OPS-1", "C1")]


@pytest.mark.parametrize(
    ("serializer", "problem"),
    [
        (lambda t: ["not", "a", "mapping"], "must return a mapping, got list"),
        (lambda t: 1 / 0, "context_serializer failed: ZeroDivisionError"),
        (lambda t: {"when": object()}, "not plain JSON data"),
        (lambda t: {"ratio": float("nan")}, "not plain JSON data"),
        (lambda t: {"big": 2**64}, "not plain JSON data.*64-bit"),
    ],
)
async def test_a_bad_serializer_is_a_clear_error(ops: Ops, serializer: Any, problem: str) -> None:
    agent = ops.agent([[DEPLOY], "ok"], context_serializer=serializer)
    with pytest.raises(ContextSerializationError, match=problem):
        await Runner.arun(agent, "go", context=Ticket("OPS-1", "C1"))


SECRETS = {
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "openai": "sk-proj-abcdEFGH1234ijklMNOP5678qrst",
    "bearer": "Bearer abc.def-1234567890abcdef",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sflKxwRJSMeKKF2QT4fwpMeJf36",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
async def test_a_secret_in_the_context_is_refused_by_path_not_value(ops: Ops, kind: str) -> None:
    secret = SECRETS[kind]
    context = {"team": "sre", "integrations": [{"name": "x", "credential": {"v": secret}}]}
    with pytest.raises(ContextSerializationError) as caught:
        await Runner.arun(ops.agent([[DEPLOY], "ok"]), "go", context=context)
    message = str(caught.value)
    assert "context.integrations[0].credential.v" in message
    assert secret not in message
    assert secret[:12] not in message
    assert ops.effects == []


async def test_a_secret_put_into_state_context_directly_is_refused_on_save(ops: Ops) -> None:
    state = (await Runner.arun(ops.agent([[DEPLOY], "ok"]), "go", context={"a": 1})).to_state()
    state.context = {"token": SECRETS["slack"]}
    with pytest.raises(ContextSerializationError, match=r"context\.token"):
        state.to_json()


@pytest.mark.parametrize(
    "context",
    [
        {"api_token": "demo-secret-123"},
        {"password": "correct horse"},
        {"secret": "s"},
        {"private_key": "k"},
        {"db": {"clientSecret": 42}},
        {"env": [{"name": "DB_PASSWORD", "value": "plain words"}]},
    ],
)
async def test_strict_mode_refuses_a_secret_key_name_whatever_its_value(
    ops: Ops, context: dict[str, Any]
) -> None:
    with pytest.raises(ContextSerializationError, match="secret key names") as caught:
        await Runner.arun(ops.agent([[DEPLOY], "ok"]), "go", context=context)
    message = str(caught.value)
    for value in ("demo-secret-123", "correct horse", "plain words"):
        assert value not in message
    assert ops.effects == []


async def test_names_about_a_secret_and_empty_secret_fields_are_fine(ops: Ops) -> None:
    context = {"token_budget": 500, "password_length": 12, "secret_name": "db", "api_key": None}
    result = await Runner.arun(ops.agent([[DEPLOY], "ok"]), "go", context=context)
    assert result.to_state().context == context


async def test_non_strict_mode_stores_a_secret_key_name_with_a_warning(
    ops: Ops, caplog: pytest.LogCaptureFixture
) -> None:
    agent = ops.agent([[DEPLOY], "ok"], strict_context=False)
    result = await Runner.arun(agent, "go", context={"api_token": "demo-secret-123"})
    assert result.to_state().context == {"api_token": "demo-secret-123"}
    assert "context.api_token" in caplog.text
    assert "demo-secret-123" not in caplog.text
