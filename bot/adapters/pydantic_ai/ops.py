"""`ops-pydantic`: the demo ops agent built on Pydantic AI, offline.

The same four tools as `ops` (bot.demo.ops_tools: the same functions, effects file, token
and replay policies) as Pydantic AI tools (`requires_approval` where `ops` needs
approval), and the same deterministic brain (bot.demo.offline_model) behind Pydantic
AI's own `FunctionModel`, so `approvals-bot demo --agent ops-pydantic "deploy payments
1.2.3"` and `/agent @ops-pydantic ...` need no credentials.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from bot.adapters.pydantic_ai.builtin import OPS_PYDANTIC_NAME, OPS_PYDANTIC_VERSION
from bot.adapters.pydantic_ai.engine import PydanticAIEngine
from bot.demo.offline_model import OfflineOpsModel
from bot.demo.ops_agent import OPS_INSTRUCTIONS
from bot.demo.ops_tools import OPS_TOOLS
from bot.runtime import Item, ReplayPolicy, ToolSpec
from bot.runtime.model import ToolCallItem

__all__ = [
    "OPS_PYDANTIC_NAME",
    "OPS_PYDANTIC_VERSION",
    "build_ops_pydantic_agent",
    "history_of",
    "offline_ops_model",
]


async def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    specs = [ToolSpec(name=t.name, description="", parameters={}) for t in info.function_tools]
    answer = await OfflineOpsModel().respond(
        instructions="", history=history_of(messages), tools=specs
    )
    if answer.tool_calls:
        return ModelResponse(
            parts=[
                ToolCallPart(c.name, dict(c.arguments), tool_call_id=c.id)
                for c in answer.tool_calls
            ]
        )
    return ModelResponse(parts=[TextPart(answer.text or "")])


def offline_ops_model() -> FunctionModel:
    """Pydantic AI's FunctionModel answering as `OfflineOpsModel` does."""
    return FunctionModel(_respond, model_name="offline-ops")


def history_of(messages: Sequence[ModelMessage]) -> list[Item]:
    """Pydantic AI's messages as the ops model's history items."""
    history: list[Item] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            calls: list[ToolCallItem] = [
                {"id": p.tool_call_id, "name": p.tool_name, "arguments": p.args_as_dict()}
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            history.append({"type": "assistant", "content": text or None, "tool_calls": calls})
            continue
        for part in message.parts if isinstance(message, ModelRequest) else ():
            history.extend(_request_items(part))
    return history


def _request_items(part: Any) -> list[Item]:
    if isinstance(part, UserPromptPart) and isinstance(part.content, str):
        return [{"type": "user", "content": part.content}]
    if isinstance(part, ToolReturnPart | RetryPromptPart):
        failed = (
            isinstance(part, RetryPromptPart) or getattr(part, "outcome", "success") != "success"
        )
        return [
            {
                "type": "tool_result",
                "tool_call_id": part.tool_call_id,
                "name": part.tool_name or "?",
                "content": part.model_response_str()
                if isinstance(part, ToolReturnPart)
                else str(part.content),
                "is_error": failed,
            }
        ]
    return []


class OpsPydanticEngine(PydanticAIEngine):
    """The ops twin; the demo refuses a task its offline model does not understand."""

    understands_ops_tasks = True


def build_ops_pydantic_agent() -> OpsPydanticEngine:
    """`ops-pydantic` (version 1): the Pydantic AI twin of the demo ops agent, offline."""
    agent: Agent[None, Any] = Agent(
        offline_ops_model(),
        name=OPS_PYDANTIC_NAME,
        instructions=OPS_INSTRUCTIONS,
        output_type=[str, DeferredToolRequests],
        tools=[
            Tool(
                tool.function,
                takes_ctx=False,
                name=tool.name,
                description=tool.description,
                requires_approval=bool(tool.needs_approval),
            )
            for tool in OPS_TOOLS
        ],
    )
    policies: dict[str, ReplayPolicy | str] = {tool.name: tool.replay_policy for tool in OPS_TOOLS}
    return OpsPydanticEngine(agent, version=OPS_PYDANTIC_VERSION, replay_policies=policies)
