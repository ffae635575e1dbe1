"""The model: the protocol a run talks to and the conversation items it reads.

History items are plain JSON-ready dicts (TypedDicts), so a RunState serializes with one
encoder call and no per-item conversion. A model turn is an assistant item; the calls
it asked for are answered by the tool results after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict


class ToolCallItem(TypedDict):
    id: str
    name: str
    arguments: dict[str, Any]


class UserItem(TypedDict):
    type: Literal["user"]
    content: str


class AssistantItem(TypedDict):
    type: Literal["assistant"]
    content: str | None
    tool_calls: list[ToolCallItem]


class ToolResultItem(TypedDict):
    type: Literal["tool_result"]
    tool_call_id: str
    name: str
    content: str
    is_error: bool


Item = UserItem | AssistantItem | ToolResultItem


def last_turn_index(history: Sequence[Item]) -> int | None:
    """History index of the last assistant item (the turn pending calls belong to).
    Tolerates unvalidated items: a legacy payload is read before it is checked."""
    for index in range(len(history) - 1, -1, -1):
        item: Any = history[index]
        if isinstance(item, dict) and item.get("type") == "assistant":
            return index
    return None


def unanswered_calls(history: Sequence[Item]) -> tuple[int, list[ToolCallItem]]:
    """The last model turn's history index (-1 if none) and its calls without a result."""
    turn = last_turn_index(history)
    if turn is None:
        return -1, []
    asked = history[turn]
    if asked["type"] != "assistant" or not asked["tool_calls"]:
        return turn, []
    if turn == len(history) - 1:  # paused right after the model's turn: nothing answered
        return turn, list(asked["tool_calls"])
    answered = {
        item["tool_call_id"] for item in history[turn + 1 :] if item["type"] == "tool_result"
    }
    return turn, [call for call in asked["tool_calls"] if call["id"] not in answered]


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """What the model is told about a tool: its name, description and JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call the model asked for. `id` is provider-supplied; never coerced."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ModelResponse:
    """Text and/or tool calls. No tool calls means `text` is the final answer."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)


class Model(Protocol):
    """Given the instructions, the conversation and the tool schemas, answer."""

    async def respond(
        self,
        *,
        instructions: str,
        history: Sequence[Item],
        tools: Sequence[ToolSpec],
    ) -> ModelResponse: ...
