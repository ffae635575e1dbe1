"""A graph's ToolNodes, rebuilt so that the tool calls people decided go through the
bot's execution ledger.

LangGraph re-runs an interrupted node from its start when the graph resumes, and a
ToolNode runs the tool calls of its task again with it. Every call a ToolNode runs is
handed to the adapters' one loop (`bot.adapters.calls.run_call`) with a key made of the
run, the position of the model message that asked for it, and its call id: the same
however often the node runs again. A call people were asked about goes through the
ledger (claim -> replay policy -> run -> record): a recorded result comes back as the
call's `ToolMessage` without running the tool again, and its approval is re-checked by
the service's journal right before the tool runs. Any other call runs in the bot's tool
scope (`current_tool_call()`), outside the ledger, answering as the tool does (a
`Command` too).

The ledger sits innermost: the node's own wrapper (`awrap_tool_call`, where
LangChain's `HumanInTheLoopMiddleware` raises its per-call interrupts and applies an
approver's edit) runs first and hands the ledger the call as it will really run.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.pregel import Pregel
from langgraph.types import Command

from bot.adapters.calls import CallAsked, current_site, in_tool_scope, run_call
from bot.adapters.langgraph.interrupts import asked_at
from bot.adapters.registration import ToolFacts
from bot.errors import ConfigError, RunStateError
from bot.runtime.decisions import execution_key
from bot.runtime.dispatch import Done

Execute = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]


def tool_nodes(graph: Pregel[Any, Any, Any, Any], agent: str) -> dict[str, ToolNode]:
    """The graph's ToolNodes by node name (ConfigError for what the ledger cannot
    cover: a subgraph, a ToolNode with only a synchronous wrapper)."""
    if list(graph.get_subgraphs()):
        raise ConfigError(
            f"agent {agent!r}: graphs with subgraphs are not supported (their checkpoints "
            "and tool calls would escape the run's state and the ledger)"
        )
    nodes = {name: node.bound for name, node in graph.nodes.items()}
    found = {name: bound for name, bound in nodes.items() if isinstance(bound, ToolNode)}
    for name, node in found.items():
        if node._wrap_tool_call is not None and node._awrap_tool_call is None:
            raise ConfigError(
                f"agent {agent!r}: ToolNode {name!r} has a synchronous wrap_tool_call only; "
                "give it an async awrap_tool_call (the bot runs graphs asynchronously)"
            )
    return found


def with_ledger(
    graph: Pregel[Any, Any, Any, Any],
    nodes: Mapping[str, ToolNode],
    tools: Mapping[str, ToolFacts],
) -> Pregel[Any, Any, Any, Any]:
    """A copy of `graph` whose ToolNodes run their calls through the ledger."""
    replaced = {
        name: graph.nodes[name].copy({"bound": _ledger_node(node, tools)})
        for name, node in nodes.items()
    }
    return graph.copy({"nodes": {**graph.nodes, **replaced}})


def _ledger_node(node: ToolNode, tools: Mapping[str, ToolFacts]) -> ToolNode:
    outer = node._awrap_tool_call

    async def through_ledger(request: ToolCallRequest, execute: Execute) -> Any:
        async def innermost(final: ToolCallRequest) -> ToolMessage | Command[Any]:
            return await _run(final, execute, tools)

        if outer is None:
            return await innermost(request)
        return await outer(request, innermost)

    return ToolNode(
        list(node.tools_by_name.values()),
        name=node.name or "tools",
        tags=list(node.tags or ()),
        handle_tool_errors=node._handle_tool_errors,
        messages_key=node._messages_key,
        awrap_tool_call=through_ledger,
    )


async def _run(
    request: ToolCallRequest, execute: Execute, tools: Mapping[str, ToolFacts]
) -> ToolMessage | Command[Any]:
    call = request.tool_call
    call_id, name = str(call.get("id") or ""), str(call["name"])
    if not call_id:
        raise RunStateError(f"tool call {name!r} has no id; the bot keys tool calls by their id")
    asked = CallAsked(
        tool_call_id=call_id,
        tool_name=name,
        arguments=dict(call.get("args") or {}),
        execution_key=_stable_key(request.state, call_id),
    )
    if current_site().pending(call_id) is None:
        with in_tool_scope(asked):
            return await execute(request)
    facts = tools.get(name)

    async def invoke() -> Done:
        answer = await execute(request)
        if not isinstance(answer, ToolMessage):
            raise RunStateError(
                f"tool {name!r} answered an approved call with a {type(answer).__name__}, "
                "not a ToolMessage; the ledger records and replays a result, not a Command"
            )
        return Done(content=_text(answer.content), is_error=answer.status == "error")

    done = await run_call(
        asked,
        policy=facts.replay_policy if facts is not None else "manual",
        invoke=invoke,
    )
    return ToolMessage(
        content=done.content,
        name=name,
        tool_call_id=call_id,
        status="error" if done.is_error else "success",
    )


def _stable_key(state: Any, tool_call_id: str) -> str | None:
    """The call's execution key from the position of the model message that asked for
    it (None: not found, the key of the run's current stretch is used)."""
    messages = state.get("messages") if isinstance(state, Mapping) else state
    if not isinstance(messages, Sequence):
        return None
    index = asked_at(messages, tool_call_id)
    if index is None:
        return None
    return execution_key(current_site().state.run_id, index, tool_call_id)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)
