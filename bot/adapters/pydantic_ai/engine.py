"""PydanticAIEngine: a Pydantic AI `Agent` as an engine the service runs.

    agent = Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    async def deploy_release(service: str, version: str) -> str: ...

    registry.register(PydanticAIEngine(agent, name="deployer", version="1",
                                       replay_policies={"deploy_release": "idempotent"}))

The agent is registered as it is: its tools that need approval (`requires_approval=True`,
a tool raising `ApprovalRequired`, an `ApprovalRequiredToolset`, which also wraps MCP
servers) end a run with `DeferredToolRequests`, whose `approvals` become pending calls
with execution keys and keyed digests. The run's state is an `ExternalRunState` whose
engine state is the agent's message history (`ModelMessagesTypeAdapter`, JSON), sealed
by the store with the rest. Every run is given the run's id as its `conversation_id`,
so the agent's messages name our run; the agent's own `run_id` changes on each resume,
and the state keeps each of them in order.

When the run resumes, each deferred call is found again in the restored history (the
last model response's tool call with its id) and its keyed digest recomputed from the
restored tool name and arguments; only when it equals the one people decided on is the
agent told, in `DeferredToolResults.approvals`: `True`, `ToolApproved(override_args=...)`
(approve with changes) or `ToolDenied(message)` (the rejection's message, all the model
sees).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import Any

import orjson
from pydantic_ai import Agent
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, ToolCallPart
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, FunctionToolset, WrapperToolset
from pydantic_core import to_json

from bot.adapters.calls import ToolSite, site_scope
from bot.adapters.pydantic_ai.ledger import LedgerCapability
from bot.adapters.registration import (
    EditsByToolFacts,
    ToolFacts,
    Validator,
    checked_state,
    tool_facts,
)
from bot.adapters.verdicts import Refuse, check_restored, verdict_for
from bot.errors import (
    ApprovalsError,
    ConfigError,
    LimitError,
    ModelError,
    RunStateError,
    StateUnreadableError,
)
from bot.runtime import (
    AgentRun,
    EngineInfo,
    EngineResult,
    ExternalRunState,
    Journal,
    PendingCall,
    ReplayPolicy,
)

ENGINE_NAME = "pydantic-ai"
PYDANTIC_AI_VERSION = metadata.version("pydantic-ai-slim")
STATE_FORMAT = "pydantic-ai-messages-1"  # the schema of what the adapter keeps

DepsOf = Callable[[Mapping[str, Any]], Any]


class PydanticAIEngine(EditsByToolFacts):
    """A Pydantic AI agent registered with the bot (see the module doc).
    `replay_policies` give a tool that needs approval its replay policy (default
    `manual`), `review_fields` the arguments its card shows (default all); `tools` names
    the tools of toolsets the bot cannot list before a run (an MCP server's); `deps_of`
    makes the agent's `deps` from the bot's runtime dependencies (default: none)."""

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        name: str | None = None,
        version: str = "1",
        replay_policies: Mapping[str, ReplayPolicy | str] | None = None,
        review_fields: Mapping[str, Sequence[str]] | None = None,
        tools: Sequence[str] = (),
        deps_of: DepsOf | None = None,
    ) -> None:
        self._name = name or agent.name or ""
        if not self._name:
            raise ConfigError("a Pydantic AI agent needs a name: Agent(name=...) or name=")
        _check_output(agent, self._name)
        self._agent = agent
        self._version = version
        self._deps_of = deps_of
        listed = _function_tools(agent)
        names = [*listed, *(name for name in tools if name not in listed)]
        self._tools = tool_facts(
            self._name,
            names,
            replay_policies=replay_policies,
            review_fields=review_fields,
            validators={name: _validator(tool) for name, tool in listed.items()},
        )
        self._capability = LedgerCapability(self._tools)

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
        approver's changed arguments go back as `ToolApproved(override_args)`."""
        return True

    @property
    def agent(self) -> Agent[Any, Any]:
        return self._agent

    def tool_names(self) -> list[str]:
        return list(self._tools)

    def tool_named(self, name: str) -> ToolFacts | None:
        return self._tools.get(name)

    # -- states -----------------------------------------------------------------------------

    def new_state(self, task: str, *, run_id: str, context: Any = None) -> ExternalRunState:
        if context is not None:
            raise ConfigError(
                f"agent {self._name!r}: a Pydantic AI run takes its dependencies from the "
                "bot's runtime dependencies (deps_of), not a run context"
            )
        return ExternalRunState(
            run_id=run_id,
            agent_name=self._name,
            agent_version=self._version,
            engine=_engine_info(),
            engine_state={"messages": [], "input": task, "run_ids": []},
        )

    def check_state(self, state: AgentRun) -> None:
        self._checked(state)

    def _checked(self, state: AgentRun) -> ExternalRunState:
        return checked_state(
            state,
            engine=ENGINE_NAME,
            framework="Pydantic AI",
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
            raise RunStateError(f"run {state.run_id}: its Pydantic AI state is not an object")
        site = ToolSite(state=state, journal=journal, dependencies=dependencies)
        history = _restored(state, engine_state.get("messages") or [])
        try:
            with site_scope(site):
                prompt, results = await self._start(state, history, site)
                result = await self._agent.run(
                    prompt,
                    message_history=history or None,
                    deferred_tool_results=results,
                    conversation_id=state.run_id,
                    deps=self._deps_of(dependencies) if self._deps_of is not None else None,
                    capabilities=[self._capability],
                )
        except UsageLimitExceeded:
            return EngineResult(
                final_output=None,
                interruptions=[],
                state=state.finished(engine_state, None, engine=_engine_info()),
                outcome="max_turns",
            )
        except Exception as error:
            if not (site.unsettled or site.errors):  # else settled below
                if isinstance(error, ApprovalsError):
                    raise
                raise ModelError(f"the Pydantic AI run failed: {error}") from error
        else:
            if not (site.unsettled or site.errors):
                return self._outcome(state, result, max_tool_calls_per_turn)
        if site.unsettled:  # the run stops at a call a human must reconcile
            return site.stopped_uncertain()
        raise site.errors[0]  # the ledger's (a database that may recover: retried)

    async def _start(
        self, state: ExternalRunState, history: list[ModelMessage], site: ToolSite
    ) -> tuple[str | None, DeferredToolResults | None]:
        """The prompt and deferred results a run starts from: the decisions (each
        restored call re-checked first), a thread reply, or the task."""
        if state.pending_calls():
            return None, await _decisions(state, history, site)
        if state.new_input is not None:
            return state.new_input, None
        task = state.engine_state.get("input")
        if not isinstance(task, str) or history:
            raise RunStateError(f"run {state.run_id}: it has nothing to start from")
        return task, None

    def _outcome(self, state: ExternalRunState, result: Any, limit: int | None) -> EngineResult:
        messages = orjson.loads(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
        run_ids = [*state.engine_state.get("run_ids", []), str(getattr(result, "run_id", ""))]
        saved = {"messages": messages, "run_ids": run_ids}
        output = result.output
        if isinstance(output, DeferredToolRequests):
            if output.calls:
                raise RunStateError(
                    f"agent {self._name!r} deferred calls for external execution "
                    f"({', '.join(c.tool_name for c in output.calls)}); only approvals are "
                    "supported"
                )
            calls = [_pending(state, part) for part in output.approvals]
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
        text = output if isinstance(output, str) else to_json(output).decode()
        done = state.finished(saved, text, engine=_engine_info())
        return EngineResult(final_output=text, interruptions=[], state=done, outcome="completed")


async def _decisions(
    state: ExternalRunState, history: Sequence[ModelMessage], site: ToolSite
) -> DeferredToolResults:
    asked = _last_calls(history)
    approvals: dict[str, bool | ToolApproved | ToolDenied] = {}
    for pending in state.pending_calls():
        part = asked.get(pending.tool_call_id)
        if part is None:
            raise RunStateError(
                f"run {state.run_id}: its restored Pydantic AI history has no call "
                f"{pending.tool_call_id!r} to answer"
            )
        check_restored(
            state,
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            arguments=part.args_as_dict(),
            framework="Pydantic AI",
        )
        verdict = await verdict_for(site, pending)
        if isinstance(verdict, Refuse):
            approvals[pending.tool_call_id] = ToolDenied(verdict.message)
        elif verdict.arguments is not None:
            approvals[pending.tool_call_id] = ToolApproved(override_args=verdict.arguments)
        else:
            approvals[pending.tool_call_id] = True
    return DeferredToolResults(approvals=approvals)


def _last_calls(history: Sequence[ModelMessage]) -> dict[str, ToolCallPart]:
    for message in reversed(history):
        if isinstance(message, ModelResponse):
            return {
                part.tool_call_id: part for part in message.parts if isinstance(part, ToolCallPart)
            }
    return {}


def _restored(state: ExternalRunState, messages: Any) -> list[ModelMessage]:
    try:
        return list(ModelMessagesTypeAdapter.validate_python(messages))
    except Exception as error:
        raise StateUnreadableError(
            f"the installed pydantic-ai-slim {PYDANTIC_AI_VERSION} cannot read run "
            f"{state.run_id}'s message history (written by pydantic-ai-slim "
            f"{state.engine.version}): {error}"
        ) from error


def _pending(state: ExternalRunState, part: ToolCallPart) -> PendingCall:
    return PendingCall(
        tool_call_id=part.tool_call_id,
        tool_name=part.tool_name,
        arguments=part.args_as_dict(),
        execution_key=state.key_for(part.tool_call_id),
        status="approval",
    )


def _check_output(agent: Agent[Any, Any], name: str) -> None:
    output = agent.output_type
    types = output if isinstance(output, Sequence) and not isinstance(output, str) else [output]
    if DeferredToolRequests not in types:
        raise ConfigError(
            f"agent {name!r}: its output_type must include DeferredToolRequests (e.g. "
            "output_type=[str, DeferredToolRequests]) for its runs to pause on approvals"
        )


def _function_tools(agent: Agent[Any, Any]) -> dict[str, Any]:
    """The tools the bot can list before a run (function toolsets, however wrapped)."""
    found: dict[str, Any] = {}

    def walk(toolset: AbstractToolset[Any]) -> None:
        if isinstance(toolset, FunctionToolset):
            found.update(toolset.tools)
        elif isinstance(toolset, WrapperToolset):
            walk(toolset.wrapped)
        elif isinstance(toolset, CombinedToolset):
            for inner in toolset.toolsets:
                walk(inner)

    for toolset in agent.toolsets:
        walk(toolset)
    return found


def _validator(tool: Any) -> Validator | None:
    schema = getattr(tool, "function_schema", None)
    validator = getattr(schema, "validator", None)
    validate = getattr(validator, "validate_python", None)
    return validate if callable(validate) else None


def _engine_info() -> EngineInfo:
    return EngineInfo(name=ENGINE_NAME, version=PYDANTIC_AI_VERSION, schema_version=STATE_FORMAT)
