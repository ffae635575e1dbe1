"""Approve with changes: merge an approver's edit over the real arguments, and apply it.

The card (and the modal) show the redacted snapshot, so an approver edits arguments they
partly cannot see. `merge_edit` keeps every value the approver did not really change: a
field left out, a value equal to the redaction marker, or a value equal to the redacted
form of the stored one keeps the stored value; anything else replaces it. A marker left
anywhere else is refused: it would run with the placeholder text.

`amend_call` puts the new arguments into the paused run's state (RunState.amend_arguments:
the model's tool call in the history and the pending call, which must agree; from then
on the call has a keyed digest even if it had a legacy one; ExternalRunState's: the
pending call, the engine's own state keeps what its model asked and its adapter hands
the framework the changed arguments), and `noted_agent` gives the resumed run an agent
whose tool prefixes the result of an amended call with a note, so that the model knows
the call ran with arguments an approver changed (an adapter notes it itself).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from bot.canonical import canonical_arguments
from bot.credentials import REDACTED, redact
from bot.errors import InputError, UnknownCallError
from bot.runtime import (
    Agent,
    AgentEngine,
    AgentRun,
    AgentTools,
    PendingCall,
    Tool,
    current_tool_call,
)
from store.records import ApprovalRecord


@runtime_checkable
class ArgumentsCheck(Protocol):
    """A tool that can check changed arguments (a bot `Tool`, an adapter's tool)."""

    @property
    def name(self) -> str: ...

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]: ...


@runtime_checkable
class AmendableRun(Protocol):
    """A run state that takes an approver's changed arguments for a pending call."""

    def amend_arguments(self, tool_call_id: str, arguments: Mapping[str, Any]) -> None: ...


async def built(agent: AgentEngine) -> AgentEngine:
    """The engine itself: one registered before its framework was imported
    (bot.adapters.lazy, which has `load`) is built first, off the event loop."""
    load = getattr(agent, "load", None)
    if load is None:
        return agent
    engine: AgentEngine = await load()
    return engine


def merge_edit(stored: Any, edited: Any) -> Any:
    """`edited` over `stored`, keeping what the approver left as shown (module doc)."""
    if edited == REDACTED or edited == redact(stored)[0]:
        return stored
    if isinstance(stored, dict) and isinstance(edited, dict):
        merged = dict(stored)
        for key, value in edited.items():
            merged[key] = merge_edit(stored[key], value) if key in stored else value
        return merged
    if isinstance(stored, list) and isinstance(edited, list) and len(stored) == len(edited):
        return [merge_edit(old, new) for old, new in zip(stored, edited, strict=True)]
    return edited


def check_no_marker(value: Any, path: str = "$") -> None:
    if isinstance(value, str) and REDACTED in value:
        raise InputError(
            f"{path} still holds the redaction marker {REDACTED}; type the real value or "
            "leave the field exactly as shown"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            check_no_marker(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_no_marker(item, f"{path}[{index}]")


def edited_arguments(
    tool: ArgumentsCheck, stored: Mapping[str, Any], edit: Mapping[str, Any]
) -> dict[str, Any]:
    """The new arguments: merged, free of markers, valid for the tool (InputError)."""
    if not isinstance(edit, Mapping):
        raise InputError("the changed arguments must be a JSON object")
    merged = merge_edit(dict(stored), dict(edit))
    check_no_marker(merged)
    try:
        tool.validate(merged)
    except InputError as error:
        raise InputError(f"the changed arguments do not fit {tool.name}: {error}") from None
    canonical_arguments(merged)  # refuses what has no canonical form (NaN, ...)
    return dict(merged)


def pending_call(state: AgentRun, approval: ApprovalRecord) -> PendingCall:
    """The pending call of `state` that `approval` is for."""
    for call in state.pending_calls():
        if approval.answers(execution_key=call.execution_key, tool_call_id=call.tool_call_id):
            return call
    raise UnknownCallError(
        f"run {state.run_id} has no pending call {approval.tool_call_id!r} for approval "
        f"{approval.approval_id}"
    )


def amend_call(state: AmendableRun, tool_call_id: str, arguments: dict[str, Any]) -> None:
    """Give the pending call, and the model's tool call in the history, new arguments."""
    state.amend_arguments(tool_call_id, arguments)


def change_note(approval: ApprovalRecord) -> str:
    snapshot = json.loads(approval.snapshot)
    shown = json.dumps(snapshot.get("arguments", {}), ensure_ascii=False, sort_keys=True)
    return (
        f"[Note: approver {approval.amended_by} changed this call's arguments before "
        f"approving it; it ran with {shown}.]\n"
    )


def noted_agent(agent: Agent, approved: Mapping[str, ApprovalRecord]) -> Agent:
    """`agent` with the tools of amended calls prefixing those calls' results with a note."""
    notes = {key: change_note(row) for key, row in approved.items() if row.amended_by}
    if not notes:
        return agent
    names = {row.tool_name for row in approved.values() if row.amended_by}
    tools = [_noted_tool(tool, notes) if tool.name in names else tool for tool in agent.tools]
    return replace(agent, tools=AgentTools(tools, owner=agent.name))


def _noted_tool(tool: Tool, notes: Mapping[str, str]) -> Tool:
    original = tool.function

    async def with_note(**kwargs: Any) -> str:
        if inspect.iscoroutinefunction(original):
            value = await original(**kwargs)
        else:
            value = await asyncio.to_thread(original, **kwargs)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return notes.get(current_tool_call().execution_key, "") + text

    return replace(tool, function=with_note)
