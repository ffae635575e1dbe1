"""Paused states of each agent framework the bot runs, at a chosen size, for
bench/runstate.py: one status call answered with a result of growing size, then a deploy
that needs approval, built through the framework's public API with its scripted model.

Each `Paused` gives the framework's own serialisation round trip of that state (what
the framework itself does to persist and restore it) and the adapter's engine state
(what the bot keeps of it inside an `ExternalRunState`), so the bench can measure what
the bot adds around it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

RESULT_TEXT = "api: healthy, 3/3 replicas ready, p99 41ms, last deploy 1.4.2 (2 days ago)"
DEPLOY = {"service": "api", "version": "1.4.2"}
TURNS: list[tuple[str, dict[str, Any], str]] = [
    ("get_status", {"service": "api"}, "c_s"),
    ("deploy_release", DEPLOY, "c_d"),
]  # what the scripted models ask, turn by turn


@dataclass(frozen=True, kw_only=True)
class Paused:
    framework: str  # the engine name
    own_bytes: int  # the framework's own serialisation of the state
    own_round_trip: Callable[[], Awaitable[Any]]  # serialise and restore, the framework's way
    engine_state: Any  # what the adapter keeps inside the bot's state
    call_id: str


Builder = Callable[[int], Awaitable[Paused]]


def status_text(chars: int) -> str:
    return (RESULT_TEXT + " ") * (chars // (len(RESULT_TEXT) + 1) + 1)


async def sized(build: Builder, target: int) -> Paused:
    """The framework's paused state whose own serialisation is about `target` bytes
    (the size grows linearly with the status result: two builds find the slope)."""
    small, large = await build(0), await build(10_000)
    per_char = max((large.own_bytes - small.own_bytes) / 10_000, 1e-9)
    return await build(max(0, int((target - small.own_bytes) / per_char)))


# -- OpenAI Agents SDK -----------------------------------------------------------------


async def openai_agents(chars: int) -> Paused:
    from agents import Agent, RunConfig, Runner, RunState, function_tool
    from agents.testing import ScriptedModel, function_call

    @function_tool
    def get_status(service: str) -> str:
        """Report a service's health."""
        return status_text(chars)

    @function_tool(needs_approval=True)
    def deploy_release(service: str, version: str) -> str:
        """Deploy a release."""
        return "deployed"

    steps: list[Any] = [
        [function_call("get_status", {"service": "api"}, call_id="c_s")],
        [function_call("deploy_release", DEPLOY, call_id="c_d")],
    ]
    agent = Agent(
        name="ops", instructions="Operate.", tools=[get_status, deploy_release],
        model=ScriptedModel(steps),
    )  # fmt: skip
    result = await Runner.run(agent, "status, deploy", run_config=RunConfig(tracing_disabled=True))
    state = result.to_state()
    assert result.interruptions, "the SDK run did not pause for approval"

    async def round_trip() -> Any:
        return await RunState.from_string(agent, state.to_string())

    return Paused(
        framework="openai-agents",
        own_bytes=len(state.to_string()),
        own_round_trip=round_trip,
        engine_state={"paused": state.to_json()},
        call_id="c_d",
    )


# -- LangGraph -------------------------------------------------------------------------


async def langgraph(chars: int) -> Paused:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from bot.adapters.langgraph.checkpoint import latest
    from bot.adapters.langgraph.ops import review

    @tool
    def get_status(service: str) -> str:
        """Report a service's health."""
        return status_text(chars)

    @tool
    def deploy_release(service: str, version: str) -> str:
        """Deploy a release."""
        return "deployed"

    def agent(state: MessagesState) -> dict[str, Any]:
        turn = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        name, args, call_id = TURNS[turn]
        ask = {"name": name, "args": args, "id": call_id, "type": "tool_call"}
        return {"messages": [AIMessage(content="", tool_calls=[ask])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([get_status, deploy_release], awrap_tool_call=review))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "bench"}}
    await graph.ainvoke({"messages": [{"role": "user", "content": "status, deploy"}]}, config)
    found = saver.get_tuple(config)
    assert found is not None, "the graph did not checkpoint"
    assert found.pending_writes, "the graph did not pause"
    serde = saver.serde
    values = [found.checkpoint, *(value for _, _, value in found.pending_writes)]

    async def round_trip() -> Any:
        return [serde.loads_typed(serde.dumps_typed(value)) for value in values]

    own = sum(len(serde.dumps_typed(value)[1]) for value in values)
    return Paused(
        framework="langgraph",
        own_bytes=own,
        own_round_trip=round_trip,
        engine_state={"checkpoint": latest(saver, thread_id="bench"), "context": None},
        call_id="c_d",
    )


# -- Pydantic AI -----------------------------------------------------------------------


async def pydantic_ai(chars: int) -> Paused:
    import orjson
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelResponse,
        ToolCallPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.tools import DeferredToolRequests

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(1 for m in messages if isinstance(m, ModelResponse))
        name, args, call_id = TURNS[turn]
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=call_id)])

    agent: Agent[None, Any] = Agent(FunctionModel(respond), output_type=[str, DeferredToolRequests])

    @agent.tool_plain
    def get_status(service: str) -> str:
        """Report a service's health."""
        return status_text(chars)

    @agent.tool_plain(requires_approval=True)
    def deploy_release(service: str, version: str) -> str:
        """Deploy a release."""
        return "deployed"

    result = await agent.run("status, deploy")
    assert isinstance(result.output, DeferredToolRequests), "the agent did not pause"
    messages = result.all_messages()
    text = ModelMessagesTypeAdapter.dump_json(messages)

    async def round_trip() -> Any:
        return ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages))

    return Paused(
        framework="pydantic-ai",
        own_bytes=len(text),
        own_round_trip=round_trip,
        engine_state={"messages": orjson.loads(text), "input": None, "run_ids": []},
        call_id="c_d",
    )


FRAMEWORKS: dict[str, tuple[str, Builder]] = {
    "openai-agents": ("agents", openai_agents),
    "langgraph": ("langgraph", langgraph),
    "pydantic-ai": ("pydantic_ai", pydantic_ai),
}


def installed() -> dict[str, Builder]:
    """The frameworks whose extra is installed, by engine name."""
    return {
        name: build
        for name, (module, build) in FRAMEWORKS.items()
        if importlib.util.find_spec(module) is not None
    }
