"""`ops-openai`: the demo ops agent built on the OpenAI Agents SDK, offline.

The same four tools as `ops` (bot.demo.ops_tools: the same functions, the same effects file
and token, the same replay policies) as SDK function tools, and the same deterministic
brain (bot.demo.offline_model) behind the SDK's own scripted model
(`agents.testing.ScriptedModel`), so `approvals-bot demo --agent ops-openai "deploy
payments 1.2.3"` and `/agent @ops-openai deploy payments 1.2.3` need no credentials.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agents import Agent as SdkAgent
from agents import function_tool
from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem
from agents.models.interface import Model
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from bot.adapters.openai_agents.builtin import OPS_OPENAI_NAME, OPS_OPENAI_VERSION
from bot.adapters.openai_agents.engine import OpenAIAgentsEngine
from bot.demo.offline_model import OfflineOpsModel
from bot.demo.ops_agent import OPS_INSTRUCTIONS
from bot.demo.ops_tools import OPS_TOOLS
from bot.runtime import Item, Tool, ToolSpec
from bot.runtime.model import ToolCallItem

__all__ = ["OPS_OPENAI_NAME", "OPS_OPENAI_VERSION", "OfflineOpsScript", "build_ops_openai_agent"]


class OfflineOpsScript(Model):
    """The SDK's ScriptedModel with one step per model call, whose responder reads the
    call's input as the ops model's history and answers as `OfflineOpsModel` does (a
    fresh script per call: a bot serves runs without end, a script would run dry)."""

    def __init__(self) -> None:
        self._brain = OfflineOpsModel()

    def _script(self) -> ScriptedModel:
        return ScriptedModel([ModelStep.respond(self._respond)])

    async def _respond(self, call: ModelCall) -> list[TResponseOutputItem]:
        history = history_of(call.input)
        specs = [ToolSpec(name=t.name, description="", parameters={}) for t in call.tools]
        response = await self._brain.respond(instructions="", history=history, tools=specs)
        if response.tool_calls:
            return [
                function_call(c.name, dict(c.arguments), call_id=c.id) for c in response.tool_calls
            ]
        return [assistant_message(response.text or "")]

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return await self._script().get_response(*args, **kwargs)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        return self._script().stream_response(*args, **kwargs)


def history_of(given: str | Sequence[TResponseInputItem]) -> list[Item]:
    """The SDK's input items as the ops model's history items."""
    if isinstance(given, str):
        return [{"type": "user", "content": given}]
    history: list[Item] = []
    names: dict[str, str] = {}
    for raw in given:
        item: dict[str, Any] = dict(raw)
        kind = item.get("type")
        if kind == "function_call":
            call: ToolCallItem = {
                "id": str(item["call_id"]),
                "name": str(item["name"]),
                "arguments": json.loads(item.get("arguments") or "{}"),
            }
            names[call["id"]] = call["name"]
            last = history[-1] if history else None
            if last is not None and last["type"] == "assistant" and not last["content"]:
                last["tool_calls"].append(call)
            else:
                history.append({"type": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            call_id = str(item["call_id"])
            history.append(
                {
                    "type": "tool_result",
                    "tool_call_id": call_id,
                    "name": names.get(call_id, "?"),
                    "content": str(item.get("output", "")),
                    "is_error": False,
                }
            )
        elif item.get("role") == "user":
            history.append({"type": "user", "content": _text(item.get("content"))})
        elif item.get("role") == "assistant":
            history.append(
                {"type": "assistant", "content": _text(item.get("content")), "tool_calls": []}
            )
    return history


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _sdk_tool(tool: Tool) -> Any:
    """Our ops tool's function as an SDK function tool (same name, schema, approval)."""
    return function_tool(
        tool.function,
        name_override=tool.name,
        needs_approval=bool(tool.needs_approval),
    )


class OpsOpenAIEngine(OpenAIAgentsEngine):
    """The ops twin; the demo refuses a task its offline model does not understand."""

    understands_ops_tasks = True


def build_ops_openai_agent() -> OpsOpenAIEngine:
    """`ops-openai` (version 1): the SDK twin of the demo ops agent, offline."""
    agent: SdkAgent[Any] = SdkAgent(
        name=OPS_OPENAI_NAME,
        instructions=OPS_INSTRUCTIONS,
        tools=[_sdk_tool(tool) for tool in OPS_TOOLS],
        model=OfflineOpsScript(),
    )
    policies = {tool.name: tool.replay_policy for tool in OPS_TOOLS}
    return OpsOpenAIEngine(agent, version=OPS_OPENAI_VERSION, replay_policies=policies)
