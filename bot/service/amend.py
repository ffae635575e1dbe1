"""Approve with changes: merge an approver's edit over the real arguments, and apply it.

The card (and the modal) show the redacted snapshot, so an approver edits arguments they
partly cannot see. `merge_edit` keeps every value the approver did not really change: a
field left out, a value equal to the redaction marker, or a value equal to the redacted
form of the stored one keeps the stored value; anything else replaces it. A marker left
anywhere else is refused: it would run with the placeholder text.

Which calls may be changed, how new arguments are checked and how they get into the
state is one question with two answers:

- the run core (an `Agent` with its `RunState`): the tool's own `validate`, and
  RunState.amend_arguments (the model's tool call in the history and the pending call,
  which must agree; from then on the call has a keyed digest even if it had a legacy
  one);
- any other engine: only as an `ArgumentEditor` (bot.runtime.engine), which answers per
  call from the run's state (`can_amend`: the tool's schema as the call was asked),
  checks the merged arguments (`check_arguments`) and returns a changed copy of the
  state (`amended`). The LangGraph and Pydantic AI adapters and the MCP gateway are
  editors; an engine that is not one (the OpenAI Agents SDK's) offers no change.

`edit_for` and `amended_state` are those two answers; `can_change` is what the card is
told when it is posted (bot.service.asking.card_snapshot). `noted_agent` gives the
resumed run core an agent whose tool prefixes the result of an amended call with a note,
so that the model knows the call ran with arguments an approver changed (an editing
engine tells its own caller).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from bot.canonical import canonical_arguments
from bot.credentials import REDACTED, redact
from bot.errors import InputError, UnknownCallError
from bot.runtime import (
    Agent,
    AgentEngine,
    AgentRun,
    AgentTools,
    ArgumentEditor,
    PendingCall,
    RunState,
    Tool,
    current_tool_call,
)
from store.records import ApprovalRecord


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
    tool: Tool, stored: Mapping[str, Any], edit: Mapping[str, Any]
) -> dict[str, Any]:
    """The new arguments: merged, free of markers, valid for the tool (InputError)."""
    return _checked_edit(tool.validate, tool.name, stored, edit)


def can_change(agent: AgentEngine, state: AgentRun, call: PendingCall) -> bool | None:
    """Whether approvers may change `call`'s arguments, when its engine answers that per
    call (an amendable `ArgumentEditor`); None when the answer is the same for every call
    of the engine (the run core: yes; any other engine: no)."""
    if isinstance(state, RunState) or not agent.amendable:
        return None
    if not isinstance(agent, ArgumentEditor):
        return None  # it claims to edit but cannot say how: as an engine that does not
    return agent.can_amend(state, call)


def edit_for(
    agent: AgentEngine, state: AgentRun, call: PendingCall, edit: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The arguments `call` would run with after `edit` (InputError when they do not fit
    its tool); None when its engine lets nobody change them (or not for this call)."""
    if not agent.amendable:
        return None
    if isinstance(agent, Agent) and isinstance(state, RunState):
        tool = agent.tool_named(call.tool_name)
        if tool is None:
            raise InputError(f"the agent has no tool {call.tool_name!r}")
        return edited_arguments(tool, call.arguments, edit)
    if isinstance(agent, ArgumentEditor) and agent.can_amend(state, call):
        check = partial(agent.check_arguments, state, call)
        return _checked_edit(check, call.tool_name, call.arguments, edit)
    return None


def amended_state(
    agent: AgentEngine, state: AgentRun, call: PendingCall, arguments: dict[str, Any]
) -> AgentRun:
    """A copy of `state` in which `call` has `arguments` (`edit_for` allowed them);
    `state` itself stays as it was."""
    if isinstance(state, RunState):
        amended = RunState.from_json(state.to_json())
        amended.amend_arguments(call.tool_call_id, arguments)
        return amended
    if not isinstance(agent, ArgumentEditor):
        raise InputError(f"the arguments of {call.tool_name} cannot be changed")
    return agent.amended(state, call.tool_call_id, arguments)


def _checked_edit(
    check: Callable[[dict[str, Any]], object],
    tool_name: str,
    stored: Mapping[str, Any],
    edit: Mapping[str, Any],
) -> dict[str, Any]:
    if not isinstance(edit, Mapping):
        raise InputError("the changed arguments must be a JSON object")
    merged = merge_edit(dict(stored), dict(edit))
    check_no_marker(merged)
    try:
        check(merged)
    except InputError as error:
        raise InputError(f"the changed arguments do not fit {tool_name}: {error}") from None
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
