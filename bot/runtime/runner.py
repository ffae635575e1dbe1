"""The Runner: model turns and tool calls until a final answer, a pause or max_turns.

    result = await Runner.arun(agent, "deploy api 1.2.3")
    if result.state is not None:        # paused: store state.to_json(); decide; resume:
        state = result.state
        state.approve(result.interruptions[0], approver_id="U1")
        result = await Runner.arun(agent, state)

A model turn's calls are planned before any of them runs: when one needs a decision
nobody has taken yet, the run pauses with every approval-needing call of that turn
pending, and none of the turn's calls runs. Decided calls then run in the model's order,
each through the journal (see `dispatch`). A `pause` check (bot.runtime.result) is asked
before each model turn and each tool call: when it says so, the run stops there, paused
with nothing to decide, and resumes from its state like any paused run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from bot.canonical import canonical_arguments
from bot.errors import (
    AgentNotRegisteredError,
    InputError,
    LimitError,
    ModelError,
    RunStateError,
    StateUnreadableError,
    UnknownCallError,
)
from bot.runtime.agent import Agent, AgentRegistry
from bot.runtime.context import deserialize_context, serialize_context
from bot.runtime.decisions import (
    ABORTED_MESSAGE,
    AbortCall,
    ApprovedCall,
    OutstandingCall,
    PendingCall,
    PendingStatus,
    RejectedCall,
    RetryCall,
    VerifiedResult,
)
from bot.runtime.dispatch import CallSite, Done, dispatch
from bot.runtime.engine import RunOutcome
from bot.runtime.journal import InMemoryJournal, Journal
from bot.runtime.model import AssistantItem, ModelResponse, ToolCallItem
from bot.runtime.result import PauseCheck, RunResult
from bot.runtime.state import RunState
from bot.runtime.state_format import DEFAULT_MAX_TURNS
from bot.runtime.tools import Tool, invalid_arguments

logger = logging.getLogger(__name__)


# -- the plan for one outstanding call ------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Answer:
    """Known without running the tool (unknown tool, bad arguments, rejection, abort)."""

    content: str
    is_error: bool
    pending: PendingCall | None = None


@dataclass(frozen=True, kw_only=True)
class _Execute:
    tool: Tool
    redispatch: bool = False
    pending: PendingCall | None = None


@dataclass(frozen=True, kw_only=True)
class _Verified:
    result: str
    pending: PendingCall


@dataclass(frozen=True, kw_only=True)
class _Wait:
    """A decision is missing: approval, or reconciliation of an uncertain call."""

    pending: PendingCall


_Plan = _Answer | _Execute | _Verified | _Wait


class Runner:
    @staticmethod
    async def arun(
        agent: Agent | None,
        input_or_state: str | RunState,
        *,
        context: Any = None,
        max_turns: int | None = None,
        journal: Journal | None = None,
        dependencies: Mapping[str, Any] | None = None,
        registry: AgentRegistry | None = None,
        max_tool_calls_per_turn: int | None = None,
        pause: PauseCheck | None = None,
    ) -> RunResult:
        """Run `agent` on new input, or resume a RunState (the agent must match the
        state's name and version; with a registry, it may be looked up there).
        `pause` (a PauseSignal, or any async check) is asked before every step.

        `max_turns` defaults to 10 for a new run and to the state's limit on resume.
        A model turn asking for more than `max_tool_calls_per_turn` calls (default: no
        limit) raises LimitError before any of its calls runs or pauses.
        `dependencies` reach tools through `current_tool_call().dependencies` and are
        never stored. The given RunState is not modified: `result.state` is a copy."""
        if max_turns is not None and max_turns < 1:
            raise InputError(f"max_turns must be at least 1, got {max_turns}")
        if max_tool_calls_per_turn is not None and max_tool_calls_per_turn < 1:
            raise InputError(
                f"max_tool_calls_per_turn must be at least 1, got {max_tool_calls_per_turn}"
            )
        if isinstance(input_or_state, RunState):
            run = _Run.resume(agent, input_or_state, context=context, registry=registry)
            if max_turns is not None:
                run.state.max_turns = max_turns
        elif isinstance(input_or_state, str):
            if agent is None:
                raise InputError("a new run needs an agent")
            run = _Run.start(agent, input_or_state, context=context, max_turns=max_turns)
        else:
            raise InputError(
                "Runner.arun takes a task string or a RunState, "
                f"got {type(input_or_state).__name__}"
            )
        site = CallSite(
            run_id=run.state.run_id,
            journal=journal if journal is not None else InMemoryJournal(),
            dependencies=MappingProxyType(dict(dependencies or {})),
            context=run.live_context,
        )
        run.calls_per_turn = max_tool_calls_per_turn
        run.pause = pause
        return await run.loop(site)

    run = arun  # the name other agent SDKs use


@dataclass(kw_only=True)
class _Run:
    agent: Agent
    state: RunState
    live_context: Any
    calls_per_turn: int | None = None  # the most tool calls one model turn may ask for
    pause: PauseCheck | None = None

    async def _pause_requested(self) -> bool:
        if self.pause is None or not await self.pause():
            return False
        logger.info("run %s pauses on request before its next step", self.state.run_id)
        return True

    @classmethod
    def start(cls, agent: Agent, task: str, *, context: Any, max_turns: int | None) -> _Run:
        stored = serialize_context(
            context, serializer=agent.context_serializer, strict=agent.strict_context
        )
        state = RunState(
            run_id=uuid.uuid4().hex,
            agent_name=agent.name,
            agent_version=agent.version,
            max_turns=max_turns or DEFAULT_MAX_TURNS,
            history=[{"type": "user", "content": task}],
            context=stored,
        )
        return cls(agent=agent, state=state, live_context=context)

    @classmethod
    def resume(
        cls, agent: Agent | None, given: RunState, *, context: Any, registry: AgentRegistry | None
    ) -> _Run:
        agent = _agent_for(agent, given, registry)
        if not given.history:
            raise RunStateError(f"run {given.run_id} has no history to resume from")
        state = RunState.from_json(given.to_json())
        if context is None:
            context = deserialize_context(state.context, deserializer=agent.context_deserializer)
        return cls(agent=agent, state=state, live_context=context)

    async def loop(self, site: CallSite) -> RunResult:
        state = self.state
        while True:
            outstanding = state.outstanding_calls()
            if outstanding:
                if not await self._settle_turn(site, outstanding):
                    return self._finish("paused")
                continue
            if state.history[-1]["type"] == "assistant":
                return self._finish("completed")
            if state.current_turn >= state.max_turns:
                logger.info("run %s reached max_turns=%d", state.run_id, state.max_turns)
                return self._finish("max_turns")
            if await self._pause_requested():
                return self._finish("paused")
            response = await self.agent.model.respond(
                instructions=self.agent.instructions,
                history=list(state.history),
                tools=self.agent.tool_specs(),
            )
            self._check_calls(response)
            state.current_turn += 1
            assistant, refused = _assistant_item(response)
            state.history.append(assistant)
            for call, problem in refused:
                self._result(call, invalid_arguments(call["name"], problem), True)

    def _check_calls(self, response: ModelResponse) -> None:
        asked, limit = len(response.tool_calls), self.calls_per_turn
        if limit is not None and asked > limit:
            raise LimitError(
                f"the model asked for {asked} tool calls in one turn; the limit is {limit} "
                "per turn, so none of them ran"
            )

    def _finish(self, outcome: RunOutcome) -> RunResult:
        self.state.context = serialize_context(
            self.live_context,
            serializer=self.agent.context_serializer,
            strict=self.agent.strict_context,
        )
        return RunResult(
            final_output=self.state.final_output if outcome == "completed" else None,
            interruptions=self.state.get_interruptions(),
            outcome=outcome,
            _state=self.state,
        )

    async def _settle_turn(self, site: CallSite, outstanding: list[OutstandingCall]) -> bool:
        """Run the turn's outstanding calls; False when the run pauses instead (a call
        waits for a decision, or a pause was asked for before a call with effects)."""
        plans = [(item, self._plan(item)) for item in outstanding]
        pending = [plan.pending for _, plan in plans if plan.pending is not None]
        if any(isinstance(plan, _Wait) for _, plan in plans):
            self.state.set_pending(pending)
            return False
        for item, plan in plans:
            call = item.call
            if isinstance(plan, _Execute | _Verified) and await self._pause_requested():
                return False
            if isinstance(plan, _Answer):
                self._result(call, plan.content, plan.is_error)
            elif isinstance(plan, _Verified):
                await _record_verified(site, item.execution_key, plan.result)
                self._result(call, plan.result, False)
            elif isinstance(plan, _Execute):
                digest = self.state.digest_of(
                    tool_call_id=call["id"],
                    tool_name=plan.tool.name,
                    execution_key=item.execution_key,
                    arguments=call["arguments"],
                )
                outcome = await dispatch(
                    site,
                    plan.tool,
                    call,
                    execution_key=item.execution_key,
                    digest=digest,
                    redispatch=plan.redispatch,
                )
                if not isinstance(outcome, Done):
                    self.state.mark_uncertain(plan.pending or _pending(item, "uncertain"))
                    return False
                self._result(call, outcome.content, outcome.is_error)
        return True

    def _result(self, call: ToolCallItem, content: str, is_error: bool) -> None:
        self.state.add_result(
            tool_call_id=call["id"], name=call["name"], content=content, is_error=is_error
        )

    def _plan(self, item: OutstandingCall) -> _Plan:
        call = item.call
        existing = next(
            (p for p in self.state.pending_calls() if p.tool_call_id == call["id"]), None
        )
        if existing is not None and existing.status == "uncertain":
            return self._plan_uncertain(existing)
        tool = self.agent.tool_named(call["name"])
        if tool is None:
            names = ", ".join(t.name for t in self.agent.tools) or "none"
            return _Answer(
                content=f"Unknown tool {call['name']!r}. Available tools: {names}.",
                is_error=True,
            )
        try:
            tool.validate(call["arguments"])
        except InputError as error:
            return _Answer(content=invalid_arguments(tool.name, error), is_error=True)
        if existing is not None:
            # Asked before: only a decision lets it run, whatever the rule says now.
            decision = self.state.decision_for(existing)
            if isinstance(decision, ApprovedCall):
                return _Execute(tool=tool, pending=existing)
            if isinstance(decision, RejectedCall):
                return _Answer(content=decision.message, is_error=True, pending=existing)
            return _Wait(pending=existing)
        if not tool.requires_approval(call["arguments"]):
            return _Execute(tool=tool)
        # Not asked yet: an always-rule decides it without making it pending.
        rule = self.state.always_rule(tool.name)
        if isinstance(rule, ApprovedCall):
            return _Execute(tool=tool)
        if isinstance(rule, RejectedCall):
            return _Answer(content=rule.message, is_error=True)
        return _Wait(pending=_pending(item, "approval"))

    def _plan_uncertain(self, pending: PendingCall) -> _Plan:
        decision = self.state.decision_for(pending)
        if isinstance(decision, VerifiedResult):
            return _Verified(result=decision.result, pending=pending)
        if isinstance(decision, AbortCall):
            return _Answer(content=ABORTED_MESSAGE, is_error=True, pending=pending)
        tool = self.agent.tool_named(pending.tool_name)
        if isinstance(decision, RetryCall) and tool is not None:
            return _Execute(tool=tool, redispatch=True, pending=pending)
        if isinstance(decision, RetryCall):
            return _Answer(content=f"Unknown tool {pending.tool_name!r}.", is_error=True)
        return _Wait(pending=pending)


async def _record_verified(site: CallSite, key: str, result: str) -> None:
    """Give the journal the human-verified result. A journal that never saw the key (a
    fresh in-memory one after a restart) has nothing to reconcile: the result stands."""
    try:
        await site.journal.resolve_with_result(execution_key=key, result=result)
    except UnknownCallError:
        logger.warning("journal has no entry for %s; using the verified result as is", key)


def _pending(item: OutstandingCall, status: PendingStatus) -> PendingCall:
    return PendingCall(
        tool_call_id=item.call["id"],
        tool_name=item.call["name"],
        arguments=item.call["arguments"],
        execution_key=item.execution_key,
        status=status,
    )


def _assistant_item(
    response: ModelResponse,
) -> tuple[AssistantItem, list[tuple[ToolCallItem, str]]]:
    """The model's turn as a history item, and the calls refused at the boundary.

    Arguments that are not canonical JSON (NaN or Infinity, which a lenient JSON parser
    accepts; integers beyond 64 bits; lone surrogates) would not survive the stored
    RunState unchanged, so the approved call could differ from the executed one. Such a
    call is kept in the history with empty arguments (the turn must still list it for
    its result) and answered at once with an error the model can act on."""
    seen: set[str] = set()
    calls: list[ToolCallItem] = []
    refused: list[tuple[ToolCallItem, str]] = []
    for call in response.tool_calls:
        if not isinstance(call.id, str) or not call.id or call.id in seen:
            raise ModelError(f"the model returned a missing or repeated tool call id {call.id!r}")
        if not isinstance(call.arguments, dict):
            raise ModelError(f"the model's arguments for {call.name!r} are not a JSON object")
        seen.add(call.id)
        item: ToolCallItem = {"id": call.id, "name": call.name, "arguments": dict(call.arguments)}
        try:
            canonical_arguments(item["arguments"])
        except InputError as error:
            item["arguments"] = {}
            refused.append((item, str(error)))
        calls.append(item)
    return {"type": "assistant", "content": response.text, "tool_calls": calls}, refused


def _agent_for(agent: Agent | None, state: RunState, registry: AgentRegistry | None) -> Agent:
    """The agent that may resume `state`: same name and version, or refuse."""
    if registry is not None:
        registered = registry.get(state.agent_name, state.agent_version)
        if not isinstance(registered, Agent):
            raise StateUnreadableError(
                f"run {state.run_id} is a run core state, but agent {state.agent_name!r} "
                f"version {state.agent_version!r} is registered as another engine's agent"
            )
        agent = agent if agent is not None else registered
    if agent is None:
        raise InputError("resuming a run needs its agent, or a registry to find it in")
    if (agent.name, agent.version) != (state.agent_name, state.agent_version):
        raise AgentNotRegisteredError(
            f"run {state.run_id} belongs to agent {state.agent_name!r} version "
            f"{state.agent_version!r}, but agent {agent.name!r} version {agent.version!r} "
            "was given to resume it"
        )
    return agent
