"""A deterministic model for tests: it answers from a script, step by step.

    ScriptedModel([
        [("deploy_release", {"service": "api", "version": "1.2.3"})],
        "Deployed.",
    ])

The step is chosen by the number of assistant turns already in the history, so a fresh
ScriptedModel resumes a paused run at the right step (as after a restart). Tool call ids
are `call_<step>_<index>`. Running past the end of the script is a ModelError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.errors import ConfigError, ModelError
from bot.runtime.model import Item, ModelResponse, ToolCall, ToolSpec

ScriptStep = str | Sequence[tuple[str, Mapping[str, Any]]]


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """What the model was asked, kept for tests to inspect."""

    instructions: str
    history: list[Item]
    tools: list[ToolSpec]


class ScriptedModel:
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
