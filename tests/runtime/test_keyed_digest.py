"""Keyed call digests: HMAC-SHA256 with the run's own digest key, over the agent, the
tool, the execution key and the canonical arguments.

A card shows the digest next to the redacted arguments, so an unkeyed hash would let
anyone with a wordlist confirm a hidden value. The key lives only inside the (sealed)
RunState; a state from before keyed digests keeps the unkeyed SHA-256 for the calls it
was already waiting on, so their pending approvals still match.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path
from typing import Any

import pytest

from bot.canonical import CALL_DIGEST_DOMAIN, call_digest, legacy_arguments_digest
from bot.errors import AlreadyDecidedError, RunStateError
from bot.runtime import (
    CURRENT_SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    Agent,
    InMemoryJournal,
    ModelResponse,
    PendingCall,
    Runner,
    RunState,
    ToolCall,
    current_tool_call,
    tool,
)
from tests.runtime.runtime_support import Ops

FIXTURES = Path(__file__).parent.parent / "fixtures" / "run_state"
PASSWORD_CALL = ("set_config", {"service": "db", "key": "password", "value": "Summer2024!"})


async def paused(ops: Ops, call: tuple[str, dict[str, Any]] = PASSWORD_CALL) -> RunState:
    result = await Runner.arun(ops.agent([[call], "done"]), "set the password")
    assert result.outcome == "paused"
    return result.to_state()


def unkeyed(arguments: dict[str, Any]) -> str:
    return hashlib.sha256(legacy_canonical(arguments)).hexdigest()


def legacy_canonical(arguments: dict[str, Any]) -> bytes:
    from bot.canonical import canonical_arguments

    return canonical_arguments(arguments)


async def test_the_same_call_in_two_runs_has_two_unrelated_digests(ops: Ops) -> None:
    first, second = await paused(ops), await paused(ops)
    [a], [b] = first.pending_calls(), second.pending_calls()
    assert (a.tool_name, a.arguments) == (b.tool_name, b.arguments)
    digest_a, digest_b = first.call_digest(a), second.call_digest(b)
    assert re.fullmatch(r"[0-9a-f]{64}", digest_a)
    assert digest_a != digest_b
    # Nobody holding only the arguments can reproduce it: it is not their SHA-256.
    assert unkeyed(a.arguments) not in (digest_a, digest_b)


async def test_the_digest_is_the_hmac_over_domain_identity_and_arguments(ops: Ops) -> None:
    state = await paused(ops)
    [call] = state.pending_calls()
    key = bytes.fromhex(state.to_dict()["digest_key"])
    assert len(key) == 32
    message = b"\x1f".join(
        [
            CALL_DIGEST_DOMAIN,
            b"ops",
            b"1",
            b"set_config",
            call.execution_key.encode(),
            legacy_canonical(call.arguments),
        ]
    )
    assert CALL_DIGEST_DOMAIN == b"approvals-bot call digest v2"
    assert state.call_digest(call) == hmac.new(key, message, hashlib.sha256).hexdigest()


def test_every_part_of_the_call_changes_the_digest() -> None:
    key = bytes(range(32))
    base: dict[str, Any] = {
        "agent_name": "ops",
        "agent_version": "1",
        "tool_name": "backup_db",
        "execution_key": "k" * 32,
        "arguments": {"db": "main"},
    }
    digest = call_digest(key, **base)
    changed = [
        call_digest(bytes(32), **base),
        call_digest(key, **{**base, "agent_name": "ops2"}),
        call_digest(key, **{**base, "agent_version": "2"}),
        call_digest(key, **{**base, "tool_name": "drop_db"}),
        call_digest(key, **{**base, "execution_key": "j" * 32}),
        call_digest(key, **{**base, "arguments": {"db": "other"}}),
    ]
    assert digest not in changed
    assert len(set(changed)) == len(changed)


def test_an_identity_field_holding_the_separator_is_refused() -> None:
    with pytest.raises(ValueError, match="agent_name"):
        call_digest(
            bytes(32),
            agent_name="a\x1fb",
            agent_version="1",
            tool_name="t",
            execution_key="k",
            arguments={},
        )


async def test_the_digest_survives_the_wire_and_the_key_is_not_in_the_repr(ops: Ops) -> None:
    state = await paused(ops)
    [call] = state.pending_calls()
    again = RunState.from_json(state.to_json())
    assert again.call_digest(call) == state.call_digest(call)
    key_hex = state.to_dict()["digest_key"]
    assert key_hex not in repr(state)
    assert state.to_dict()["$schemaVersion"] == CURRENT_SCHEMA_VERSION == "1.1"


async def test_a_tool_sees_the_digest_its_card_showed_and_the_ledger_keeps_it(ops: Ops) -> None:
    seen: list[str] = []

    @tool(needs_approval=True)
    async def set_config(service: str, key: str, value: str) -> str:
        """Set one configuration value."""
        seen.append(current_tool_call().digest)
        return "ok"

    agent = ops.agent([[PASSWORD_CALL], "done"])
    agent = type(agent)(
        name=agent.name, instructions=agent.instructions, tools=[set_config], model=agent.model
    )
    first = await Runner.arun(agent, "set it")
    [call] = first.interruptions
    shown = first.to_state().call_digest(call)
    first.to_state().approve(call)
    journal = RecordingJournal()
    await Runner.arun(agent, first.to_state(), journal=journal)
    assert seen == [shown]
    assert journal.digests == [shown]


async def test_calls_that_need_no_approval_are_journaled_with_a_keyed_digest(ops: Ops) -> None:
    journal = RecordingJournal()
    call = ("get_status", {"service": "api"})
    result = await Runner.arun(ops.agent([[call], "healthy"]), "status api", journal=journal)
    assert result.outcome == "completed"
    [digest] = journal.digests
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert digest != unkeyed({"service": "api"})


class RecordingJournal(InMemoryJournal):
    def __init__(self) -> None:
        super().__init__()
        self.digests: list[str] = []

    async def claim(self, **arguments: Any) -> Any:
        self.digests.append(arguments["arguments_digest"])
        return await super().claim(**arguments)


# -- the 1.0 -> 1.1 migration ---------------------------------------------------------


def test_version_1_1_is_supported_and_summarised() -> None:
    assert "1.0" in SUPPORTED_SCHEMA_VERSIONS
    assert "digest key" in SUPPORTED_SCHEMA_VERSIONS["1.1"]


def test_a_1_0_state_keeps_the_unkeyed_digest_for_the_calls_it_waits_on() -> None:
    state = RunState.from_json((FIXTURES / "v1.0_paused.json").read_text())
    deploy, restart = state.pending_calls()
    assert state.legacy_digest_calls == frozenset({deploy.tool_call_id, restart.tool_call_id})
    assert state.call_digest(deploy) == unkeyed(deploy.arguments)
    assert state.call_digest(deploy) == legacy_arguments_digest(deploy.arguments)
    # Saved again, it is a 1.1 state with a key, and the legacy calls stay legacy.
    again = RunState.from_json(state.to_json())
    assert again.to_dict()["$schemaVersion"] == "1.1"
    assert again.legacy_digest_calls == state.legacy_digest_calls
    assert again.call_digest(restart) == unkeyed(restart.arguments)


async def test_a_legacy_call_stops_being_legacy_once_answered(ops: Ops) -> None:
    state = RunState.from_json((FIXTURES / "v1.0_paused.json").read_text())
    deploy, restart = state.pending_calls()
    state.reject(restart, message="not now")
    # The next turn reuses a provider call id of the answered turn: it must not inherit
    # the unkeyed digest.
    agent = Agent(
        name="ops",
        instructions="x",
        tools=ops.tools,
        model=ReusingModel(deploy.tool_call_id),
    )
    result = await Runner.arun(agent, state, journal=InMemoryJournal())
    assert result.outcome == "paused"
    assert result.to_state().legacy_digest_calls == frozenset()
    [call] = result.to_state().pending_calls()
    assert call.tool_call_id == deploy.tool_call_id
    assert result.to_state().call_digest(call) != unkeyed(call.arguments)


class ReusingModel:
    """Asks for a deploy under a call id an earlier turn already used."""

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id

    async def respond(self, **_: Any) -> ModelResponse:
        arguments = {"service": "api", "version": "9.9.9"}
        return ModelResponse(
            tool_calls=[ToolCall(id=self.call_id, name="deploy_release", arguments=arguments)]
        )


def test_legacy_calls_must_be_calls_the_state_waits_on() -> None:
    data = RunState.from_json((FIXTURES / "v1.0_paused.json").read_text()).to_dict()
    data["legacy_digest_calls"] = ["call_that_never_was"]
    with pytest.raises(RunStateError, match="legacy_digest_calls"):
        RunState.from_dict(data)


@pytest.mark.parametrize("bad", ["", "zz" * 32, "ab" * 16, 7, None])
def test_a_malformed_digest_key_is_refused(bad: object) -> None:
    data = RunState.from_json((FIXTURES / "v1.0_paused.json").read_text()).to_dict()
    data["digest_key"] = bad
    with pytest.raises(RunStateError, match="digest_key"):
        RunState.from_dict(data)


def test_amending_a_legacy_call_gives_it_a_keyed_digest() -> None:
    state = RunState.from_json((FIXTURES / "v1.0_paused.json").read_text())
    deploy, restart = state.pending_calls()  # deploy is approved already, restart is not
    with pytest.raises(AlreadyDecidedError):
        state.amend_arguments(deploy.tool_call_id, {"service": "api", "version": "1.4.3"})
    state.amend_arguments(restart.tool_call_id, {"service": "api"})
    [amended] = [c for c in state.pending_calls() if c.tool_call_id == restart.tool_call_id]
    assert amended.arguments == {"service": "api"}
    assert state.legacy_digest_calls == frozenset({deploy.tool_call_id})
    assert state.call_digest(amended) != unkeyed(amended.arguments)
    RunState.from_json(state.to_json())  # history and pending call still agree


def test_call_digest_of_an_unknown_call_is_refused() -> None:
    state = RunState.from_json((FIXTURES / "v1.0_paused.json").read_text())
    stranger = PendingCall(
        tool_call_id="nope", tool_name="x", arguments={}, execution_key="k", status="approval"
    )
    with pytest.raises(Exception, match="nope"):
        state.call_digest(stranger)
