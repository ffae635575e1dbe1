"""The model: the protocol a run talks to, the conversation items it reads, and
`ScriptedModel`, a deterministic model for tests and benchmarks.

History items are plain JSON-ready dicts (TypedDicts), so a RunState serializes with one
encoder call and no per-item conversion. A model turn is an assistant item; the calls
it asked for are answered by the tool results after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict

from bot.errors import ConfigError, ModelError


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

    @property
    def input(self) -> dict[str, Any]:
        """The arguments, by the name some SDKs give them."""
        return self.arguments


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


# -- a scripted model ------------------------------------------------------------------

ScriptStep = str | Sequence[tuple[str, Mapping[str, Any]]]


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """What the model was asked, kept for tests to inspect."""

    instructions: str
    history: list[Item]
    tools: list[ToolSpec]


class ScriptedModel:
    """A deterministic model that answers from a script, step by step.

        ScriptedModel([
            [("deploy_release", {"service": "api", "version": "1.2.3"})],
            "Deployed.",
        ])

    The step is chosen by the number of assistant turns already in the history, so a
    fresh ScriptedModel resumes a paused run at the right step (as after a restart).
    Tool call ids are `call_<step>_<index>`. Running past the end is a ModelError."""

    def __init__(self, script: Sequence[ScriptStep]) -> None:
        self._script = [_checked_step(index, step) for index, step in enumerate(script)]
        self.requests: list[ModelRequest] = []

    async def respond(
        self,
        *,
        instructions: str,
        history: Sequence[Item],
        tools: Sequence[ToolSpec],
    ) -> ModelResponse:
        self.requests.append(
            ModelRequest(instructions=instructions, history=list(history), tools=list(tools))
        )
        step = sum(1 for item in history if item["type"] == "assistant")
        if step >= len(self._script):
            raise ModelError(
                f"ScriptedModel script exhausted: asked for step {step + 1} "
                f"of a {len(self._script)}-step script"
            )
        planned = self._script[step]
        if isinstance(planned, str):
            return ModelResponse(text=planned)
        calls = [
            ToolCall(id=f"call_{step}_{index}", name=name, arguments=dict(arguments))
            for index, (name, arguments) in enumerate(planned)
        ]
        return ModelResponse(tool_calls=calls)


def _checked_step(index: int, step: ScriptStep) -> ScriptStep:
    if isinstance(step, str):
        return step
    calls = list(step)
    if not calls:
        raise ConfigError(f"script step {index}: give a final text or at least one tool call")
    for call in calls:
        if (
            not isinstance(call, tuple)
            or len(call) != 2
            or not isinstance(call[0], str)
            or not isinstance(call[1], Mapping)
        ):
            raise ConfigError(
                f"script step {index}: each tool call must be (tool_name, arguments_dict), "
                f"got {call!r}"
            )
    return calls
