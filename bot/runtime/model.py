"""The Model protocol and the conversation items it reads.

History items are plain JSON-ready dicts (TypedDicts), so a RunState serializes with one
`json.dumps` and no per-item conversion.
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
