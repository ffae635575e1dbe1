"""A paused graph's interrupts as the tool calls people decide, and their decisions as
the values the graph resumes with.

Three interrupt values stand for tool calls (the formats of LangChain's
`HumanInTheLoopMiddleware`, which a graph's own nodes may raise too):

- per call (`interrupt_mode="per_call"`, or a node's own `interrupt(...)`): a mapping
  with `name`, `args` and `tool_call_id` (`{"type": "tool_approval", ...}`), answered
  with one decision: `{"type": "approve"}`, `{"type": "edit", "edited_action": {"name":
  ..., "args": {...}}}` or `{"type": "reject", "message": "..."}`;
- batched (the middleware's default): `{"action_requests": [{"name", "args"}, ...],
  "review_configs": [...]}` for the gated calls of the last model turn, answered with
  `{"decisions": [...]}` in the same order. The requests carry no call ids: each is
  matched, in order, to the turn's tool call of the same name and arguments.

Several pending interrupts are answered at once, by interrupt id. Any other interrupt
value is not a tool call the bot can show on a card: the run fails, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.types import Interrupt

from bot.adapters.verdicts import Refuse, Verdict
from bot.errors import RunStateError


@dataclass(frozen=True, kw_only=True)
class InterruptedCall:
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Asked:
    """One interrupt: its id, its calls, and whether it takes a list of decisions."""

    interrupt_id: str
    batched: bool
    calls: tuple[InterruptedCall, ...]


def asked_calls(interrupts: Sequence[Interrupt], messages: Sequence[Any]) -> list[Asked]:
    """Each interrupt as the calls it asks about (RunStateError for one that is not)."""
    return [_asked(interrupt, messages) for interrupt in interrupts]


def resume_value(asked: Asked, verdicts: Sequence[Verdict]) -> Any:
    """What the interrupt is resumed with, in the middleware's decision format."""
    decisions = [
        _decision(call, verdict) for call, verdict in zip(asked.calls, verdicts, strict=True)
    ]
    return {"decisions": decisions} if asked.batched else decisions[0]


def asked_at(messages: Sequence[Any], tool_call_id: str) -> int | None:
    """The position in `messages` of the model message that asked for the call."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and any(
            call.get("id") == tool_call_id for call in message.tool_calls
        ):
            return index
    return None


def _decision(call: InterruptedCall, verdict: Verdict) -> dict[str, Any]:
    if isinstance(verdict, Refuse):
        return {"type": "reject", "message": verdict.message}
    if verdict.arguments is None:
        return {"type": "approve"}
    return {"type": "edit", "edited_action": {"name": call.tool_name, "args": verdict.arguments}}


def _asked(interrupt: Interrupt, messages: Sequence[Any]) -> Asked:
    value = interrupt.value
    if isinstance(value, Mapping) and isinstance(value.get("action_requests"), list):
        requests = value["action_requests"]
        return Asked(
            interrupt_id=interrupt.id,
            batched=True,
            calls=tuple(_match_turn(interrupt.id, requests, messages)),
        )
    if isinstance(value, Mapping) and isinstance(value.get("name"), str):
        call_id = value.get("tool_call_id")
        if not isinstance(call_id, str) or asked_at(messages, call_id) is None:
            raise RunStateError(
                f"interrupt {interrupt.id} asks about {value['name']!r} without the id of "
                "a tool call the model made (tool_call_id); the bot runs a tool call only "
                "through its graph's ToolNode"
            )
        return Asked(
            interrupt_id=interrupt.id,
            batched=False,
            calls=(_call(interrupt.id, call_id, value),),
        )
    raise RunStateError(
        f"interrupt {interrupt.id} is not a tool call the bot can ask about (a mapping with "
        "name, args and tool_call_id, or the HumanInTheLoopMiddleware's action_requests)"
    )


def _match_turn(
    interrupt_id: str, requests: Sequence[Any], messages: Sequence[Any]
) -> list[InterruptedCall]:
    """The batched requests matched, in order, to the last model turn's tool calls."""
    turn = next((m for m in reversed(messages) if isinstance(m, AIMessage) and m.tool_calls), None)
    offered = list(turn.tool_calls) if turn is not None else []
    found: list[InterruptedCall] = []
    for request in requests:
        if not isinstance(request, Mapping):
            raise RunStateError(f"interrupt {interrupt_id}: an action request is not a mapping")
        while offered and (
            offered[0]["name"] != request.get("name") or offered[0]["args"] != request.get("args")
        ):
            offered.pop(0)
        if not offered:
            raise RunStateError(
                f"interrupt {interrupt_id} asks about {request.get('name')!r} with arguments "
                "no tool call of the model's last turn has"
            )
        call = offered.pop(0)
        found.append(_call(interrupt_id, str(call["id"]), request))
    return found


def _call(interrupt_id: str, call_id: str, value: Mapping[str, Any]) -> InterruptedCall:
    arguments = value.get("args")
    if not isinstance(arguments, Mapping):
        raise RunStateError(f"interrupt {interrupt_id}: the call's args are not a mapping")
    return InterruptedCall(
        tool_call_id=call_id, tool_name=str(value["name"]), arguments=dict(arguments)
    )
