"""Another engine's run state: notes for a reviewer beside a pending call, and arguments
an approver changed (approve with changes through an `ArgumentEditor` engine)."""

from __future__ import annotations

import pytest

from bot.errors import AlreadyDecidedError
from bot.runtime import EngineInfo, ExternalRunState, PendingCall, read_run_state

ENGINE = EngineInfo(name="example", version="1", schema_version="1")


def _paused(notes: dict[str, list[str]] | None = None) -> ExternalRunState:
    state = ExternalRunState(
        run_id="run-1", agent_name="agent", agent_version="1", engine=ENGINE, engine_state={}
    )
    call = PendingCall(
        tool_call_id="c1",
        tool_name="deploy",
        arguments={"service": "api"},
        execution_key=state.key_for("c1"),
        status="approval",
    )
    return state.paused({}, [call], engine=ENGINE, notes=notes)


def test_notes_are_stored_with_the_call_and_read_back() -> None:
    state = _paused({"c1": ["the definition changed"], "other": ["dropped: no such call"]})
    again = read_run_state(state.to_json())
    assert isinstance(again, ExternalRunState)
    assert again.notes_for("c1") == ("the definition changed",)
    assert "other" not in again.to_json()


def test_a_state_written_before_notes_reads_with_none() -> None:
    text = _paused().to_json().replace(',"call_notes":{}', "")
    assert "call_notes" not in text
    state = read_run_state(text)
    assert isinstance(state, ExternalRunState)
    assert state.notes_for("c1") == ()


def test_changed_arguments_change_the_digest_not_the_key_and_leave_the_state_as_it_was() -> None:
    state = _paused({"c1": ["note"]})
    (call,) = state.pending_calls()
    changed = state.with_arguments("c1", {"service": "web"})
    (new_call,) = changed.pending_calls()
    assert new_call.arguments == {"service": "web"}
    assert new_call.execution_key == call.execution_key
    assert changed.call_digest("c1") != state.call_digest("c1")
    assert state.pending_calls()[0].arguments == {"service": "api"}
    assert changed.notes_for("c1") == ("note",)


def test_a_decided_call_cannot_be_changed() -> None:
    state = _paused()
    state.approve("c1")
    with pytest.raises(AlreadyDecidedError):
        state.with_arguments("c1", {"service": "web"})
