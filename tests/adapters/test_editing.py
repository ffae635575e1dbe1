"""Approve with changes for the adapters, through the one mechanism every engine but the
run core uses (bot.runtime.ArgumentEditor): a call may be changed when its tool has a
validator, the validator checks the edit, the changed state is a copy that keeps the
arguments the framework asked with; what the card is told (bot.service.amend.can_change)
is answered per call, also through a lazily registered engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pytest

from bot.adapters.lazy import LazyEngine
from bot.adapters.registration import EditsByToolFacts, ToolFacts, tool_facts
from bot.errors import InputError
from bot.runtime import (
    Agent,
    AgentEngine,
    ArgumentEditor,
    EngineInfo,
    ExternalRunState,
    PendingCall,
    ScriptedModel,
    tool,
)
from bot.service.amend import can_change, edit_for

ENGINE = EngineInfo(name="example", version="1", schema_version="1")


def _version_is_text(arguments: Mapping[str, Any]) -> None:
    if not isinstance(arguments.get("version"), str):
        raise ValueError("version: a string is required")


class Editor(EditsByToolFacts):
    """The smallest adapter engine: `deploy` has a validator, `shell` has none."""

    amendable = True

    def __init__(self) -> None:
        self._tools = tool_facts(
            "agent",
            ["deploy", "shell"],
            replay_policies=None,
            review_fields=None,
            validators={"deploy": _version_is_text, "shell": None},
        )

    def tool_named(self, name: str) -> ToolFacts | None:
        return self._tools.get(name)


def _engine(editor: Editor) -> AgentEngine:
    """The service's view of it (the rest of an engine is not asked here)."""
    return cast(AgentEngine, editor)


def _paused() -> tuple[ExternalRunState, dict[str, PendingCall]]:
    state = ExternalRunState(
        run_id="run-1", agent_name="agent", agent_version="1", engine=ENGINE, engine_state={}
    )
    calls = [
        PendingCall(
            tool_call_id=call_id,
            tool_name=name,
            arguments=arguments,
            execution_key=state.key_for(call_id),
            status="approval",
        )
        for call_id, name, arguments in [
            ("c1", "deploy", {"service": "api", "version": "1.0"}),
            ("c2", "shell", {"command": "ls"}),
        ]
    ]
    paused = state.paused({}, calls, engine=ENGINE)
    return paused, {call.tool_name: call for call in paused.pending_calls()}


def test_a_call_may_be_changed_when_its_tool_has_a_validator() -> None:
    editor = Editor()
    state, calls = _paused()
    assert isinstance(editor, ArgumentEditor)
    assert editor.can_amend(state, calls["deploy"])
    assert not editor.can_amend(state, calls["shell"])
    assert can_change(_engine(editor), state, calls["deploy"]) is True
    assert can_change(_engine(editor), state, calls["shell"]) is False  # the card says why not


def test_the_validator_checks_the_merged_edit() -> None:
    editor = Editor()
    state, calls = _paused()
    assert edit_for(_engine(editor), state, calls["deploy"], {"version": "1.1"}) == {
        "service": "api",
        "version": "1.1",
    }
    with pytest.raises(InputError, match="do not fit deploy: version: a string is required"):
        edit_for(_engine(editor), state, calls["deploy"], {"version": 11})
    assert edit_for(_engine(editor), state, calls["shell"], {"command": "rm -rf /"}) is None


def test_the_changed_state_is_a_copy_that_keeps_what_the_framework_asked() -> None:
    editor = Editor()
    state, calls = _paused()
    before = state.to_json()
    changed = editor.amended(state, "c1", {"service": "api", "version": "1.1"})
    assert state.to_json() == before
    assert isinstance(changed, ExternalRunState)
    [deploy] = [c for c in changed.pending_calls() if c.tool_call_id == "c1"]
    assert deploy.arguments == {"service": "api", "version": "1.1"}
    assert changed.amended_arguments(deploy) == {"service": "api", "version": "1.1"}
    assert changed.requested_digest(deploy) == state.call_digest(calls["deploy"])
    assert changed.call_digest(deploy) != state.call_digest(calls["deploy"])


def test_a_lazy_engine_answers_as_the_engine_it_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = LazyEngine(
        factory="x:y", name="agent", version="1", tools=["deploy", "shell"], amendable=True
    )
    monkeypatch.setattr(lazy, "_build", Editor)
    state, calls = _paused()
    assert can_change(lazy, state, calls["deploy"]) is True
    assert can_change(lazy, state, calls["shell"]) is False
    assert lazy.check_arguments(state, calls["deploy"], {"version": "2"}) == {"version": "2"}


def test_an_engine_that_does_not_edit_is_answered_for_all_its_calls() -> None:
    """The run core: every call (None: its own rule); an engine that edits nothing (the
    OpenAI Agents SDK's): None too, and no edit is taken."""

    @tool(needs_approval=True)
    def deploy(service: str, version: str) -> str:
        """Deploy."""
        return "ok"

    agent = Agent(name="a", instructions="-", tools=[deploy], model=ScriptedModel(["ok"]))
    core_state = agent.new_state("go", run_id="r")
    call = PendingCall(
        tool_call_id="c1", tool_name="deploy", arguments={}, execution_key="k", status="approval"
    )
    assert can_change(agent, core_state, call) is None

    lazy = LazyEngine(factory="x:y", name="agent", version="1", tools=["deploy"], amendable=False)
    state, calls = _paused()
    assert can_change(lazy, state, calls["deploy"]) is None
    assert edit_for(lazy, state, calls["deploy"], {"version": "2"}) is None
