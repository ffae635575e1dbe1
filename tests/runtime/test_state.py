"""RunState on the wire: versions, legacy payloads, migrations, integrity, audit metadata."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from bot.errors import InputError, RunStateError, SchemaVersionError
from bot.runtime import (
    CURRENT_SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    ApprovedCall,
    RejectedCall,
    Runner,
    RunState,
    state_format,
)
from tests.runtime.runtime_support import Ops

DEPLOY = ("deploy_release", {"service": "api", "version": "1.4.2"})
RESTART = ("restart_service", {"service": "worker"})


async def paused_payload(ops: Ops) -> dict[str, Any]:
    result = await Runner.arun(ops.agent([[DEPLOY, RESTART], "ok"]), "go", context={"team": "sre"})
    return result.to_state().to_dict()


def test_every_supported_version_has_a_one_line_summary() -> None:
    assert CURRENT_SCHEMA_VERSION == "1.1"
    assert CURRENT_SCHEMA_VERSION in SUPPORTED_SCHEMA_VERSIONS
    for version, summary in SUPPORTED_SCHEMA_VERSIONS.items():
        assert summary.strip(), version
        assert "\n" not in summary, version


async def test_to_json_stamps_the_current_version_and_round_trips(ops: Ops) -> None:
    payload = await paused_payload(ops)
    assert payload["$schemaVersion"] == CURRENT_SCHEMA_VERSION
    state = RunState.from_dict(payload)
    assert state.to_dict() == payload
    assert RunState.from_json(state.to_json()).to_json() == state.to_json()


@pytest.mark.parametrize("version", ["1.2", "2.0", "0.1", "", 1.0, None])
async def test_newer_or_unknown_versions_are_refused_naming_both(ops: Ops, version: Any) -> None:
    payload = {**await paused_payload(ops), "$schemaVersion": version}
    with pytest.raises(SchemaVersionError) as caught:
        RunState.from_json(json.dumps(payload))
    assert repr(version) in str(caught.value)
    assert f"'{CURRENT_SCHEMA_VERSION}'" in str(caught.value)


async def test_an_older_supported_version_is_migrated_deliberately(
    ops: Ops, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = await paused_payload(ops)
    old = {k: v for k, v in payload.items() if k != "always"}
    old["$schemaVersion"] = "0.9"
    old["max_turn_count"] = old.pop("max_turns")

    def from_0_9(data: dict[str, Any]) -> dict[str, Any]:
        upgraded = {k: v for k, v in data.items() if k != "max_turn_count"}
        return {**upgraded, "max_turns": data["max_turn_count"], "always": {}}

    monkeypatch.setattr(
        state_format, "SUPPORTED_SCHEMA_VERSIONS", {**SUPPORTED_SCHEMA_VERSIONS, "0.9": "older"}
    )
    monkeypatch.setitem(state_format.MIGRATIONS, "0.9", (CURRENT_SCHEMA_VERSION, from_0_9))
    assert RunState.from_json(json.dumps(old)).to_dict() == payload


async def test_a_supported_version_without_migration_fails_clearly(
    ops: Ops, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = {**await paused_payload(ops), "$schemaVersion": "0.8"}
    monkeypatch.setattr(state_format, "SUPPORTED_SCHEMA_VERSIONS", {"0.8": "x", "1.1": "y"})
    with pytest.raises(RunStateError, match=r"no migration from \$schemaVersion '0.8' to '1.1'"):
        RunState.from_dict(payload)


def test_legacy_bare_dict_loads_tolerantly() -> None:
    legacy = {
        "agent_name": "ops",
        "history": [
            {"type": "user", "content": "restart worker"},
            {
                "type": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "name": "restart_service", "arguments": {"service": "w"}}
                ],
            },
        ],
        "interruptions": [
            {"tool_call_id": "c1", "tool_name": "restart_service", "arguments": {"service": "w"}}
        ],
        "rejected_tools": ["c1"],
        "some_future_field": {"ignored": True},
    }
    state = RunState.from_dict(legacy)
    assert (state.agent_name, state.agent_version, state.max_turns) == ("ops", "1", 10)
    assert state.current_turn == 0
    assert state.context is None
    assert state.run_id
    [call] = state.pending_calls()
    assert call.status == "approval"
    assert call.execution_key == state.outstanding_calls()[0].execution_key
    assert isinstance(state.decision_for(call), RejectedCall)
    reloaded = RunState.from_json(state.to_json())  # it now saves in the current form
    assert reloaded.to_dict()["$schemaVersion"] == CURRENT_SCHEMA_VERSION
    assert RunState.from_dict({}).history == []  # every field has a safe default


@pytest.mark.parametrize(
    ("legacy", "problem"),
    [
        ({"approved_tools": "c1"}, "'approved_tools' must be an array"),
        ({"approved_tools": [1]}, r"'approved_tools\[\]' must be a string"),
        ({"rejected_tools": {"c1": 5}}, "'rejected_tools.c1' must be a string"),
        ({"rejected_tools": "c1"}, "'rejected_tools' must be an array"),
        ({"interruptions": [{"tool_name": "x"}]}, "tool_call_id' must be a string"),
        ({"approved_tools": ["c1"]}, "a decision names c1, which is not pending"),
        ({"approval_metadata": {"c1": {"timestamp": 5}}}, "timestamp' must be a string"),
        ({"max_turns": 0}, "'max_turns' must be at least 1"),
    ],
)
def test_a_malformed_legacy_payload_is_refused_with_the_field_named(
    legacy: dict[str, Any], problem: str
) -> None:
    with pytest.raises(RunStateError, match=problem):
        RunState.from_dict(legacy)


def _pair_arguments(payload: dict[str, Any], *, asked: Any, pending: Any) -> None:
    payload["history"][1]["tool_calls"][0]["arguments"]["replicas"] = asked
    payload["pending_calls"][0]["arguments"]["replicas"] = pending


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda p: p.pop("history"), "lacks the required field 'history'"),
        (lambda p: p.update(current_turn="2"), "'current_turn' must be an integer"),
        (lambda p: p.update(max_turns=0), "'max_turns' must be at least 1"),
        (
            lambda p: p["history"].append({"type": "system", "content": "x"}),
            "user, assistant or tool_result",
        ),
        (lambda p: p["history"][1]["tool_calls"][0].pop("id"), "string id and name"),
        (lambda p: p["pending_calls"][0].update(status="maybe"), "approval or uncertain"),
        (lambda p: p["pending_calls"][0]["arguments"].update(version="6.6.6"), "does not match"),
        (lambda p: p["pending_calls"][0].update(execution_key="forged"), "does not match"),
        # equal in Python (1 == True == 1.0), yet other arguments: another digest
        (lambda p: _pair_arguments(p, asked=1, pending=True), "does not match"),
        (lambda p: _pair_arguments(p, asked=1, pending=1.0), "does not match"),
        (lambda p: p["decisions"].update(nobody={"kind": "approved"}), "not pending"),
        (lambda p: p["decisions"].update(call_0_0={"kind": "retry"}), "does not fit"),
        (lambda p: p["decisions"].update(call_0_0={"kind": "maybe"}), "not a known decision"),
        (lambda p: p["approval_metadata"].update(c={"timestamp": "yesterday"}), "ISO timestamp"),
        (lambda p: p.update(context=["x"]), "'context' must be an object"),
        (lambda p: p.update(current_turn=True), "'current_turn' must be an integer"),
        (lambda p: p.update(pending_calls={}), "'pending_calls' must be an array"),
        (lambda p: p.update(decisions=[]), "'decisions' must be an object"),
        (lambda p: p.update(always="approved"), "'always' must be an object"),
        (lambda p: p.update(approval_metadata=None), "'approval_metadata' must be an object"),
        (lambda p: p["pending_calls"][1].pop("tool_name"), r"'pending_calls\[1\].tool_name'"),
        (lambda p: p["pending_calls"][0].update(arguments=[]), "arguments' must be an object"),
        (lambda p: p["pending_calls"].append("c"), r"'pending_calls\[2\]' must be an object"),
        (lambda p: p["history"].insert(1, ["user", "x"]), r"'history\[1\]' must be an object"),
        (lambda p: p["history"][0].pop("content"), r"'history\[0\].content' is missing"),
        (lambda p: p["history"][0].update(content=7), r"'history\[0\].content' must be a str"),
        (lambda p: p["history"][1].update(content=1), r"'history\[1\].content' .* or null"),
        (lambda p: p["history"][1].update(tool_calls={}), r"'history\[1\].tool_calls' must be"),
        (
            lambda p: p["history"][1]["tool_calls"].append("call"),
            r"'history\[1\].tool_calls\[2\]' must be an object with a string id",
        ),
        (
            lambda p: p["history"].append(
                {"type": "tool_result", "tool_call_id": "x", "name": "y", "content": "z"}
            ),
            r"'history\[2\].is_error' is missing",
        ),
        (
            lambda p: p["history"].append(
                {"type": "tool_result", "tool_call_id": "x", "name": 1, "content": "z"}
            ),
            r"'history\[2\].name' must be a string, got int",
        ),
    ],
)
async def test_malformed_payloads_are_refused_with_the_field_named(
    ops: Ops, mutate: Any, problem: str
) -> None:
    payload = copy.deepcopy(await paused_payload(ops))
    mutate(payload)
    with pytest.raises(RunStateError, match=problem):
        RunState.from_dict(payload)


async def test_a_decided_state_loads_the_same_from_text_and_from_a_dict(ops: Ops) -> None:
    result = await Runner.arun(ops.agent([[DEPLOY, RESTART], "ok"]), "go", context={"team": "sre"})
    state = result.to_state()
    deploy, restart = state.pending_calls()
    state.approve(deploy, approver_id="U1", reason="CR-1", always=True)
    state.reject(restart, message="not now", approver_id="U2")
    text = state.to_json()

    for loaded in (RunState.from_json(text), RunState.from_dict(json.loads(text))):
        assert loaded.to_json() == text
        assert loaded.pending_calls() == [deploy, restart]
        assert loaded.decision_for(deploy) == ApprovedCall()
        assert loaded.decision_for(restart) == RejectedCall(message="not now")
        assert loaded.always_rule("deploy_release") == ApprovedCall()
        assert loaded.approval_metadata == state.approval_metadata


async def test_pending_calls_are_written_field_for_field(ops: Ops) -> None:
    result = await Runner.arun(ops.agent([[DEPLOY], "ok"]), "go")
    [written] = json.loads(result.to_state().to_json())["pending_calls"]
    [call] = result.to_state().pending_calls()
    assert written == {
        "tool_call_id": call.tool_call_id,
        "tool_name": call.tool_name,
        "arguments": call.arguments,
        "execution_key": call.execution_key,
        "status": call.status,
    }
    assert list(written) == ["tool_call_id", "tool_name", "arguments", "execution_key", "status"]


def test_non_json_text_is_a_run_state_error() -> None:
    with pytest.raises(RunStateError, match="must be JSON text"):
        RunState.from_json("{not json")
    with pytest.raises(RunStateError, match="is a JSON object"):
        RunState.from_json("[]")


async def test_approval_metadata_is_audit_only_utc_and_absent_without_details(ops: Ops) -> None:
    state = RunState.from_dict(await paused_payload(ops))
    deploy, restart = state.get_interruptions()
    before = datetime.now(UTC)
    state.approve(deploy, approver_id="U1", reason="looks right")
    state.reject(restart, message="not today")
    metadata = state.approval_metadata[deploy.tool_call_id]
    assert metadata.timestamp.tzinfo is not None
    assert metadata.timestamp.utcoffset() == timedelta(0)
    assert before <= metadata.timestamp <= datetime.now(UTC)
    assert restart.tool_call_id not in state.approval_metadata
    reloaded = RunState.from_json(state.to_json())
    assert reloaded.approval_metadata == state.approval_metadata
    assert reloaded.decision_for(deploy) == ApprovedCall()
    assert reloaded.decision_for(restart) == RejectedCall(message="not today")
    assert reloaded.get_interruptions() == []


async def test_approval_metadata_records_when_the_person_decided(ops: Ops) -> None:
    """A decision applied later (when the run resumes) keeps the time it was taken."""
    state = RunState.from_dict(await paused_payload(ops))
    deploy, restart = state.get_interruptions()
    decided = datetime(2026, 11, 29, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    state.approve(deploy, approver_id="U1", reason="ok", decided_at=decided)
    assert state.approval_metadata[deploy.tool_call_id].timestamp == decided
    assert state.approval_metadata[deploy.tool_call_id].timestamp.utcoffset() == timedelta(0)
    with pytest.raises(InputError, match="timezone-aware"):
        state.reject(restart, approver_id="U2", reason="no", decided_at=datetime(2026, 1, 1))
    assert state.decision_for(restart) is None  # refused before anything was recorded
    reloaded = RunState.from_json(state.to_json())
    assert reloaded.approval_metadata[deploy.tool_call_id].timestamp == decided


async def test_follow_up_input_is_refused_while_calls_wait(ops: Ops) -> None:
    agent = ops.agent([[DEPLOY], "done", "second answer"])
    paused = await Runner.arun(agent, "go")
    with pytest.raises(RunStateError, match="waiting on tool calls"):
        paused.to_state().append_user_message("also restart")
    paused.to_state().approve(paused.to_state().get_interruptions()[0])
    done = await Runner.arun(agent, paused.to_state())
    done.to_state().append_user_message("and now?")
    follow = await Runner.arun(agent, done.to_state())
    assert follow.final_output == "second answer"
