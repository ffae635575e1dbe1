"""LangGraphEngine: a compiled LangGraph graph as an engine the service runs.

    graph = create_agent(model, tools=[deploy_release, get_status], middleware=[
        HumanInTheLoopMiddleware(interrupt_on={"deploy_release": True})])
    registry.register(LangGraphEngine(graph, name="deployer", version="1",
                                      replay_policies={"deploy_release": "idempotent"}))

The graph is registered as it is: a node's `interrupt()` that stands for a tool call
(bot.adapters.langgraph.interrupts: LangChain's HumanInTheLoopMiddleware's formats)
pauses the run, each call a pending approval with its execution key and keyed digest.
The graph's ToolNodes are rebuilt to run every call through the ledger
(bot.adapters.langgraph.tools). The run's state is an `ExternalRunState` whose engine
state is the thread's latest checkpoint (bot.adapters.langgraph.checkpoint), sealed
by the store with the rest: the graph needs no checkpointer of its own (one it has is
replaced, for the bot's runs, by a fresh in-memory saver holding that checkpoint).

When the run resumes, the restored checkpoint's interrupts are read again, each call
matched to its pending call and its keyed digest recomputed from the restored tool
name and arguments; only when it equals the one people decided on is the graph
resumed, with `Command(resume={interrupt_id: decision})`: approve, edit (approve with
changes: the approver's arguments) or reject (the rejection's message, all the model
sees).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.errors import GraphRecursionError
from langgraph.pregel import Pregel
from langgraph.types import Command

from bot.adapters.calls import ToolSite, site_scope
from bot.adapters.langgraph.checkpoint import FORMAT, latest, saver_with
from bot.adapters.langgraph.interrupts import Asked, asked_at, asked_calls, resume_value
from bot.adapters.langgraph.tools import tool_nodes, with_ledger
from bot.adapters.registration import (
    EditsByToolFacts,
    ToolFacts,
    Validator,
    checked_state,
    tool_facts,
)
from bot.adapters.verdicts import check_restored, verdict_for
from bot.errors import ApprovalsError, LimitError, ModelError, RunStateError, StateUnreadableError
from bot.runtime import (
    AgentRun,
    EngineInfo,
    EngineResult,
    ExternalRunState,
    Journal,
    PendingCall,
    ReplayPolicy,
)
from bot.runtime.context import serialize_context
from bot.runtime.decisions import execution_key

ENGINE_NAME = "langgraph"
LANGGRAPH_VERSION = metadata.version("langgraph")
STATE_FORMAT = FORMAT  # the schema of what the adapter keeps (the checkpoint inside)
DEFAULT_RECURSION_LIMIT = 25

InputOf = Callable[[str], Any]
OutputOf = Callable[[Mapping[str, Any]], str | None]


def messages_input(text: str) -> dict[str, Any]:
    """The default input of a run or a thread reply: one user message."""
    return {"messages": [{"role": "user", "content": text}]}


def last_message_text(values: Mapping[str, Any]) -> str | None:
    """The default answer: the text of the last message, when the model wrote it."""
    messages = values.get("messages") or []
    last = messages[-1] if messages else None
    return message_text(last) if isinstance(last, AIMessage) else None


class LangGraphEngine(EditsByToolFacts):
    """A compiled graph registered with the bot (see the module doc). `replay_policies`
    give a tool its replay policy (default `manual`), `review_fields` the arguments its
    card shows (default all). `input_of` makes a graph input of a task or a thread
    reply (default: one user message under `messages`), `output_of` the answer from
    the final state values (default: the last AI message's text)."""

    def __init__(
        self,
        graph: Pregel[Any, Any, Any, Any],
        *,
        name: str,
        version: str = "1",
        replay_policies: Mapping[str, ReplayPolicy | str] | None = None,
        review_fields: Mapping[str, Sequence[str]] | None = None,
        input_of: InputOf = messages_input,
        output_of: OutputOf = last_message_text,
        recursion_limit: int = DEFAULT_RECURSION_LIMIT,
    ) -> None:
        self._name = name
        self._version = version
        self._input_of = input_of
        self._output_of = output_of
        self.recursion_limit = recursion_limit
        nodes = tool_nodes(graph, name)
        by_name = {
            tool.name: tool for node in nodes.values() for tool in node.tools_by_name.values()
        }
        self._tools = tool_facts(
            name,
            list(by_name),
            replay_policies=replay_policies,
            review_fields=review_fields,
            validators={tool_name: _validator(tool) for tool_name, tool in by_name.items()},
        )
        self._graph = with_ledger(graph, nodes, self._tools)

    # -- what the registry, cards and the policy read --------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> str:
        return self._version

    @property
    def amendable(self) -> bool:
        """Yes, for the calls whose tool has an argument schema (`can_amend`): an
        approver's changed arguments go back as the middleware's `edit`."""
        return True

    @property
    def graph(self) -> Pregel[Any, Any, Any, Any]:
        """The graph as it runs: its ToolNodes' calls go through the ledger."""
        return self._graph

    def tool_names(self) -> list[str]:
        return list(self._tools)

    def tool_named(self, name: str) -> ToolFacts | None:
        return self._tools.get(name)

    # -- states -----------------------------------------------------------------------------

    def new_state(self, task: str, *, run_id: str, context: Any = None) -> ExternalRunState:
        stored = serialize_context(context, serializer=None, strict=True)
        return ExternalRunState(
            run_id=run_id,
            agent_name=self._name,
            agent_version=self._version,
            engine=_engine_info(),
            engine_state={"checkpoint": None, "input": task, "context": stored},
        )

    def check_state(self, state: AgentRun) -> None:
        self._checked(state)

    def _checked(self, state: AgentRun) -> ExternalRunState:
        return checked_state(
            state,
            engine=ENGINE_NAME,
            framework="LangGraph",
            reads={STATE_FORMAT},
            agent=self._name,
            version=self._version,
            tools=self._tools,
        )

    # -- running ----------------------------------------------------------------------------

    async def run(
        self,
        state: AgentRun,
        *,
        journal: Journal,
        dependencies: Mapping[str, Any],
        max_tool_calls_per_turn: int | None = None,
    ) -> EngineResult:
        state = self._checked(state)
        engine_state = state.engine_state
        if not isinstance(engine_state, dict):
            raise RunStateError(f"run {state.run_id}: its LangGraph state is not an object")
        site = ToolSite(
            state=state,
            journal=journal,
            dependencies=dependencies,
            context=engine_state.get("context"),
        )
        saver = _restored(state, engine_state.get("checkpoint"))
        graph = self._graph.copy({"checkpointer": saver})
        config: Any = {
            "configurable": {"thread_id": state.run_id},
            "recursion_limit": self.recursion_limit,
        }
        try:
            with site_scope(site):
                start = await self._start(graph, config, state, site)
                await graph.ainvoke(start, config)
        except GraphRecursionError:
            stopped = state.finished(self._saved(state, saver), None, engine=_engine_info())
            return EngineResult(
                final_output=None, interruptions=[], state=stopped, outcome="max_turns"
            )
        except Exception as error:
            if not (site.unsettled or site.errors):  # else settled below
                if isinstance(error, ApprovalsError):
                    raise
                raise ModelError(f"the LangGraph run failed: {error}") from error
        if site.unsettled:  # the run stops at a call a human must reconcile
            return site.stopped_uncertain()
        if site.errors:  # the ledger's (a database that may recover: retried)
            raise site.errors[0]
        return await self._outcome(graph, config, state, saver, max_tool_calls_per_turn)

    async def _start(
        self,
        graph: Pregel[Any, Any, Any, Any],
        config: Any,
        state: ExternalRunState,
        site: ToolSite,
    ) -> Any:
        """What the graph is invoked with: a resume with the decisions (each restored
        call re-checked first), a thread reply, or the task."""
        if state.pending_calls():
            snapshot = await graph.aget_state(config)
            asked = asked_calls(snapshot.interrupts, _messages(snapshot.values))
            restored = {call.tool_call_id for item in asked for call in item.calls}
            waiting = {call.tool_call_id for call in state.pending_calls()}
            if restored != waiting:
                raise RunStateError(
                    f"run {state.run_id}: its restored LangGraph checkpoint waits on "
                    f"{sorted(restored)}, not on the calls people decided ({sorted(waiting)})"
                )
            resume = {item.interrupt_id: await _answer(item, state, site) for item in asked}
            return Command(resume=resume)
        if state.new_input is not None:
            return self._input_of(state.new_input)
        task = state.engine_state.get("input")
        if not isinstance(task, str):
            raise RunStateError(f"run {state.run_id}: it has nothing to start from")
        return self._input_of(task)

    async def _outcome(
        self,
        graph: Pregel[Any, Any, Any, Any],
        config: Any,
        state: ExternalRunState,
        saver: Any,
        limit: int | None,
    ) -> EngineResult:
        snapshot = await graph.aget_state(config)
        saved = self._saved(state, saver)
        if snapshot.interrupts:
            messages = _messages(snapshot.values)
            asked = asked_calls(snapshot.interrupts, messages)
            calls = [_pending(state, call, messages) for item in asked for call in item.calls]
            if limit is not None and len(calls) > limit:
                raise LimitError(
                    f"the model asked for {len(calls)} tool calls in one turn; the limit "
                    f"is {limit} per turn, so none of them ran"
                )
            paused = state.paused(saved, calls, engine=_engine_info())
            return EngineResult(
                final_output=None,
                interruptions=paused.get_interruptions(),
                state=paused,
                outcome="paused",
            )
        answer = self._output_of(snapshot.values)
        done = state.finished(saved, answer, engine=_engine_info())
        return EngineResult(final_output=answer, interruptions=[], state=done, outcome="completed")

    def _saved(self, state: ExternalRunState, saver: Any) -> dict[str, Any]:
        engine_state = state.engine_state
        return {
            "checkpoint": latest(saver, thread_id=state.run_id),
            "context": engine_state.get("context") if isinstance(engine_state, dict) else None,
        }


async def _answer(item: Asked, state: ExternalRunState, site: ToolSite) -> Any:
    verdicts = []
    for call in item.calls:
        pending = check_restored(
            state,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            arguments=call.arguments,
            framework="LangGraph",
        )
        verdicts.append(await verdict_for(site, pending))
    return resume_value(item, verdicts)


def _restored(state: ExternalRunState, checkpoint: Any) -> Any:
    try:
        return saver_with(checkpoint, thread_id=state.run_id)
    except RunStateError as error:
        raise StateUnreadableError(
            f"the installed langgraph {LANGGRAPH_VERSION} cannot read run {state.run_id}'s "
            f"checkpoint (written by langgraph {state.engine.version}): {error}"
        ) from error


def _pending(state: ExternalRunState, call: Any, messages: Sequence[Any]) -> PendingCall:
    index = asked_at(messages, call.tool_call_id)
    key = (
        execution_key(state.run_id, index, call.tool_call_id)
        if index is not None
        else state.key_for(call.tool_call_id)
    )
    return PendingCall(
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        arguments=call.arguments,
        execution_key=key,
        status="approval",
    )


def _messages(values: Any) -> list[Any]:
    if isinstance(values, Mapping):
        found = values.get("messages")
        return list(found) if isinstance(found, list) else []
    return []


def message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
    )


def _validator(tool: Any) -> Validator | None:
    """The tool's own argument model (the schema its model sees), when it has one."""
    schema = getattr(tool, "tool_call_schema", None)
    validate = getattr(schema, "model_validate", None)
    return validate if callable(validate) else None


def _engine_info() -> EngineInfo:
    return EngineInfo(name=ENGINE_NAME, version=LANGGRAPH_VERSION, schema_version=STATE_FORMAT)
