"""The LangGraph adapter on graphs built as LangGraph users build them: LangChain's
create_agent with HumanInTheLoopMiddleware (batched and per call), a node of one's own
that calls interrupt(); the re-run-from-node-start trap; what registration refuses.
The engine runs on a real journal in memory (the service's behaviour is test_runs')."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bot.errors import ConfigError, RunStateError
from bot.runtime import ExternalRunState, InMemoryJournal
from tests.adapters.frameworks.support import installed, needs

pytestmark = needs("langgraph")
if installed("langgraph"):
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.types import interrupt

    class ScriptedChat(GenericFakeChatModel):
        """langchain-core's scripted chat model, tools bound as they are."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
            return self


DEPLOY = {"service": "payments", "version": "1.2.3"}


def turns(*messages: Any) -> Iterator[Any]:
    return iter(messages)


def calls(*items: tuple[str, dict[str, Any], str]) -> Any:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in items],
    )


def ops_tools(effects: list[str]) -> list[Any]:
    @tool
    async def deploy_release(service: str, version: str) -> str:
        """Deploy a release."""
        effects.append(f"deploy {service} {version}")
        return f"deployed {service} {version}"

    @tool
    async def restart_service(service: str) -> str:
        """Restart a service."""
        effects.append(f"restart {service}")
        return f"restarted {service}"

    @tool
    async def get_status(service: str) -> str:
        """Report a service's status."""
        effects.append(f"status {service}")
        return f"{service} ok"

    return [deploy_release, restart_service, get_status]


def middleware_agent(effects: list[str], script: Iterator[Any], mode: str) -> Any:
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware

    from bot.adapters.langgraph import LangGraphEngine

    graph = create_agent(
        ScriptedChat(messages=script),
        tools=ops_tools(effects),
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={"deploy_release": True, "restart_service": True},
                interrupt_mode=mode,  # type: ignore[arg-type]
            )
        ],
    )
    return LangGraphEngine(graph, name="deployer", replay_policies={"deploy_release": "idempotent"})


def three_calls() -> Iterator[Any]:
    return turns(
        calls(
            ("deploy_release", DEPLOY, "c1"),
            ("restart_service", {"service": "payments"}, "c2"),
            ("get_status", {"service": "payments"}, "c3"),
        ),
        AIMessage(content="done"),
    )


def texts(state: ExternalRunState) -> str:
    """Every message of the run's checkpoint, as text (decoded: msgpack in base64)."""
    import base64

    checkpoint: Any = state.engine_state["checkpoint"]
    blobs = [checkpoint["checkpoint"], *(write[2] for write in checkpoint["writes"])]
    return " ".join(base64.b64decode(blob[1]).decode("utf-8", "replace") for blob in blobs)


@pytest.mark.skipif(not installed("langchain"), reason="langchain (a dev dependency)")
@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_the_middleware_pauses_and_takes_approve_edit_and_reject(mode: str) -> None:
    effects: list[str] = []
    engine = middleware_agent(effects, three_calls(), mode)
    journal = InMemoryJournal()

    paused = await engine.run(engine.new_state("go", run_id="r1"), journal=journal, dependencies={})

    assert paused.outcome == "paused"
    asked = {call.tool_name: call for call in paused.interruptions}
    assert sorted(asked) == ["deploy_release", "restart_service"]
    assert effects == ([] if mode == "batched" else ["status payments"])  # per call: it ran
    state = ExternalRunState.from_json(paused.state.to_json())  # another process
    state.amend_arguments("c1", {"service": "payments", "version": "1.2.2"})
    state.approve("c1", approver_id="U1", reason="known good")
    state.reject("c2", message="Not during the freeze.", approver_id="U1", reason="CAB-7")

    done = await engine.run(state, journal=journal, dependencies={})

    assert done.outcome == "completed"
    assert sorted(effects) == ["deploy payments 1.2.2", "status payments"]
    conversation = texts(done.state)
    assert "Not during the freeze." in conversation
    assert "CAB-7" not in conversation


async def test_two_interrupts_of_one_step_are_answered_by_their_ids() -> None:
    from bot.adapters.langgraph import build_ops_langgraph_agent
    from bot.demo import ops_dependencies

    engine = build_ops_langgraph_agent()
    paused = await engine.run(
        engine.new_state("deploy payments 1.2.3 and restart payments", run_id="r2"),
        journal=InMemoryJournal(),
        dependencies=ops_dependencies(),
    )
    checkpoint: Any = paused.state.engine_state["checkpoint"]  # type: ignore[attr-defined]
    interrupts = [write for write in checkpoint["writes"] if write[1] == "__interrupt__"]
    assert len(interrupts) == 2  # one per call: resumed as {interrupt_id: decision}
    assert len(paused.interruptions) == 2


def rerun_trap_graph(effects: list[str]) -> Any:
    """A node of one's own: a side effect, then interrupt(), then the approved call goes
    to the ToolNode. LangGraph re-runs the node from its start on resume."""

    async def agent(state: MessagesState) -> dict[str, Any]:
        if any(m.type == "tool" for m in state["messages"]):
            return {"messages": [AIMessage(content="done")]}
        return {"messages": [calls(("deploy_release", DEPLOY, "c1"))]}

    async def review(state: MessagesState) -> dict[str, Any]:
        effects.append("note written before the interrupt")  # the user's own effect
        last: Any = state["messages"][-1]
        call = last.tool_calls[0]
        decision = interrupt({"type": "tool_approval", "tool_call_id": call["id"], **call})
        assert decision["type"] == "approve"
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("review", review)
    builder.add_node("tools", ToolNode(ops_tools(effects)))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges(
        "agent", lambda s: "review" if s["messages"][-1].tool_calls else END, ["review", END]
    )
    builder.add_edge("review", "tools")
    builder.add_edge("tools", "agent")
    return builder.compile()


async def test_the_node_re_runs_but_the_approved_call_runs_once() -> None:
    from bot.adapters.langgraph import LangGraphEngine

    effects: list[str] = []
    engine = LangGraphEngine(rerun_trap_graph(effects), name="trap")
    journal = InMemoryJournal()
    paused = await engine.run(engine.new_state("go", run_id="r3"), journal=journal, dependencies={})
    stored = paused.state.to_json()

    for _ in range(2):  # two workers resume the same stored state
        state = ExternalRunState.from_json(stored)
        state.approve("c1")
        done = await engine.run(state, journal=journal, dependencies={})
        assert done.outcome == "completed"

    # the node's own effect happened on the pause and again on each resume; the tool,
    # through the ledger, once
    assert effects.count("note written before the interrupt") == 3
    assert effects.count("deploy payments 1.2.3") == 1


async def test_an_interrupt_that_is_no_tool_call_fails_the_run_by_name() -> None:
    from bot.adapters.langgraph import LangGraphEngine

    async def ask(state: MessagesState) -> dict[str, Any]:
        interrupt("Which region?")
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    engine = LangGraphEngine(builder.compile(), name="asker")

    with pytest.raises(RunStateError, match="is not a tool call the bot can ask about"):
        await engine.run(
            engine.new_state("go", run_id="r4"), journal=InMemoryJournal(), dependencies={}
        )


async def test_a_state_whose_call_differs_from_the_decided_one_runs_nothing() -> None:
    from bot.adapters.langgraph import build_ops_langgraph_agent
    from bot.demo import ops_dependencies

    engine = build_ops_langgraph_agent()
    paused = await engine.run(
        engine.new_state("deploy payments 1.2.3", run_id="r5"),
        journal=InMemoryJournal(),
        dependencies=ops_dependencies(),
    )
    payload = json.loads(paused.state.to_json())
    payload["pending_calls"][0]["arguments"]["version"] = "9.9.9"  # our record, moved
    state = ExternalRunState.from_payload(payload)
    state.approve(state.get_interruptions()[0])

    with pytest.raises(RunStateError, match="not the call people decided on"):
        await engine.run(state, journal=InMemoryJournal(), dependencies=ops_dependencies())


def test_registration_refuses_what_the_ledger_would_not_cover() -> None:
    from bot.adapters.langgraph import LangGraphEngine

    effects: list[str] = []
    with pytest.raises(ConfigError, match="replay_policies names deploy_relase"):
        LangGraphEngine(
            rerun_trap_graph(effects), name="typo", replay_policies={"deploy_relase": "safe"}
        )
    outer = StateGraph(MessagesState)
    outer.add_node("inner", rerun_trap_graph(effects))
    outer.add_edge(START, "inner")
    with pytest.raises(ConfigError, match="subgraphs are not supported"):
        LangGraphEngine(outer.compile(), name="nested")
