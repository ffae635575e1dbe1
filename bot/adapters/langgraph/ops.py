"""`ops-langgraph`: the demo ops agent built on LangGraph, offline.

A plain LangGraph graph (no LangChain agent factory): a model node, and a ToolNode
holding the four ops tools (bot.demo.ops_tools: the same functions, effects file, token and
replay policies as `ops`). Each tool call of a model turn goes to the ToolNode as a task
of its own (`Send`), and the ToolNode's wrapper asks, with `interrupt()`, about each call
of a tool that needs approval, in the per-call format of LangChain's
HumanInTheLoopMiddleware, then runs it (approve), runs the approver's arguments (edit,
noting the change for the model) or answers the rejection's message (reject). The model
is the ops agent's deterministic brain (bot.demo.offline_model) behind langchain-core's
scripted chat model (`GenericFakeChatModel`), so `approvals-bot demo --agent
ops-langgraph "deploy payments 1.2.3"` and `/agent @ops-langgraph ...` need no
credentials.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, Send, interrupt

from bot.adapters.langgraph.builtin import OPS_LANGGRAPH_NAME, OPS_LANGGRAPH_VERSION
from bot.adapters.langgraph.engine import LangGraphEngine, message_text
from bot.credentials import redact_text
from bot.demo.offline_model import OfflineOpsModel
from bot.demo.ops_tools import OPS_TOOLS
from bot.runtime import Item, ReplayPolicy, ToolSpec
from bot.runtime.model import ToolCallItem

__all__ = [
    "OPS_LANGGRAPH_NAME",
    "OPS_LANGGRAPH_VERSION",
    "OfflineOpsChatModel",
    "build_ops_langgraph_agent",
    "history_of",
]

GATED = frozenset(tool.name for tool in OPS_TOOLS if tool.needs_approval)
Execute = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]


class OfflineOpsChatModel(GenericFakeChatModel):
    """langchain-core's scripted chat model answering as `OfflineOpsModel` does: each
    call reads the conversation as the ops model's history (a script of fixed replies
    would run dry: a bot serves runs without end)."""

    messages: Any = iter(())  # the script is the brain, not a list of replies

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> OfflineOpsChatModel:
        return self  # the brain knows the ops tools; it is told which are offered per call

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        specs = [ToolSpec(name=t.name, description="", parameters={}) for t in OPS_TOOLS]
        response = await OfflineOpsModel().respond(
            instructions="", history=history_of(messages), tools=specs
        )
        calls = [
            {"name": c.name, "args": dict(c.arguments), "id": c.id, "type": "tool_call"}
            for c in response.tool_calls
        ]
        answer = AIMessage(content=response.text or "", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=answer)])


def history_of(messages: Sequence[BaseMessage]) -> list[Item]:
    """LangChain messages as the ops model's history items."""
    history: list[Item] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            history.append({"type": "user", "content": message_text(message)})
        elif isinstance(message, AIMessage):
            calls: list[ToolCallItem] = [
                {"id": str(c["id"]), "name": c["name"], "arguments": dict(c["args"])}
                for c in message.tool_calls
            ]
            text = message_text(message) or None
            history.append({"type": "assistant", "content": text, "tool_calls": calls})
        elif isinstance(message, ToolMessage):
            history.append(
                {
                    "type": "tool_result",
                    "tool_call_id": message.tool_call_id,
                    "name": message.name or "?",
                    "content": message_text(message),
                    "is_error": message.status == "error",
                }
            )
    return history


async def review(request: ToolCallRequest, execute: Execute) -> ToolMessage | Command[Any]:
    """The ToolNode's wrapper: ask about a call that needs approval, then act on the
    decision (the HumanInTheLoopMiddleware's per-call format)."""
    call = request.tool_call
    if call["name"] not in GATED:
        return await execute(request)
    decision = interrupt(
        {
            "type": "tool_approval",
            "tool_call_id": call["id"],
            "name": call["name"],
            "args": call["args"],
            "description": f"{call['name']} needs approval",
        }
    )
    kind = decision.get("type")
    if kind == "approve":
        return await execute(request)
    if kind == "edit":
        arguments = dict(decision["edited_action"]["args"])
        ran = await execute(request.override(tool_call={**call, "args": arguments}))
        if isinstance(ran, ToolMessage):
            shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
            note = f"[Note: an approver changed this call's arguments; it ran with {shown}.]\n"
            return ran.model_copy(update={"content": note + message_text(ran)})
        return ran
    return ToolMessage(
        content=str(decision.get("message") or "The tool call was rejected."),
        name=call["name"],
        tool_call_id=str(call["id"]),
        status="error",
    )


def tool_error(error: Exception) -> str:
    """A failing tool's error as its result for the model (as `ops` does); an interrupt
    is no failure and goes on up (langgraph-prebuilt 1.0's ToolNode would answer it)."""
    if isinstance(error, GraphBubbleUp):
        raise error
    return f"Error: {type(error).__name__}: {redact_text(str(error))}"


def _tool(function: Callable[..., Any], name: str, description: str) -> BaseTool:
    return StructuredTool.from_function(coroutine=function, name=name, description=description)


def build_ops_graph(model: OfflineOpsChatModel | None = None) -> Any:
    """The ops graph (module doc), compiled without a checkpointer (the bot gives it
    one per run)."""
    chat = model or OfflineOpsChatModel()
    tools = [_tool(tool.function, tool.name, tool.description) for tool in OPS_TOOLS]
    bound = chat.bind_tools(tools)

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    def route(state: MessagesState) -> Any:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return END
        return [
            Send("tools", {"__type": "tool_call_with_context", "tool_call": c, "state": state})
            for c in last.tool_calls
        ]

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    node = ToolNode(tools, awrap_tool_call=review, handle_tool_errors=tool_error)
    builder.add_node("tools", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(name=OPS_LANGGRAPH_NAME)


class OpsLangGraphEngine(LangGraphEngine):
    """The ops twin; the demo refuses a task its offline model does not understand."""

    understands_ops_tasks = True


def build_ops_langgraph_agent() -> OpsLangGraphEngine:
    """`ops-langgraph` (version 1): the LangGraph twin of the demo ops agent, offline."""
    policies: dict[str, ReplayPolicy | str] = {tool.name: tool.replay_policy for tool in OPS_TOOLS}
    return OpsLangGraphEngine(
        build_ops_graph(),
        name=OPS_LANGGRAPH_NAME,
        version=OPS_LANGGRAPH_VERSION,
        replay_policies=policies,
    )
