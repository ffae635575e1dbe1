"""OpenAIAgentsEngine: an OpenAI Agents SDK `Agent` as an engine the service runs.

    from agents import Agent, function_tool
    from bot.adapters.openai_agents import OpenAIAgentsEngine

    @function_tool(needs_approval=True)
    async def deploy_release(service: str, version: str) -> str: ...

    registry.register(OpenAIAgentsEngine(
        Agent(name="ops-sdk", instructions="...", tools=[deploy_release]),
        version="1", replay_policies={"deploy_release": "idempotent"}))

The run's state is an `ExternalRunState` whose engine state is the SDK's own: while the
run is paused, `RunState.to_json()` of the SDK (restored with `RunState.from_json`);
while it is idle, the SDK's input list (`result.to_input_list()`, a thread reply is
appended to it). A pause is the SDK's interruptions: each becomes a pending call with
its execution key and keyed digest. When the run resumes, each interruption of the
restored SDK state is matched to its pending call and its keyed digest recomputed from
the restored tool name and arguments; only when it equals the one people decided on is
the SDK told `state.approve(item)` (or `state.reject(item, rejection_message=...)`, the
message being all the model sees). Approve with changes is not offered: the SDK has no
way to override a call's arguments.

A run's context is stored as the run core stores one: a mapping as it is, another object
only through the `context_serializer` given to the engine (the SDK's own
`to_json(context_serializer=...)`), rebuilt on resume by its `context_deserializer`
(`RunState.from_json(..., context_deserializer=...)`); a credential in what would be
stored is refused. Secrets belong in the runtime dependencies, never stored: a
deserializer re-injects them (bot.runtime.context).

A state the installed SDK cannot read (a newer `$schemaVersion`, an agent or tool renamed
since) raises StateUnreadableError: the service marks the run as needing migration.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from agents import Agent as SdkAgent
from agents import FunctionTool, RunConfig, Runner, RunState
from agents.exceptions import MaxTurnsExceeded
from agents.items import ToolApprovalItem
from agents.run_state import CURRENT_SCHEMA_VERSION, SUPPORTED_SCHEMA_VERSIONS

from bot.adapters.calls import ToolSite, site_scope
from bot.adapters.openai_agents.tools import wrap_tool
from bot.adapters.registration import ToolFacts, checked_state, tool_facts
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
from bot.runtime.context import (
    ContextDeserializer,
    ContextSerializer,
    deserialize_context,
    serialize_context,
)

ENGINE_NAME = "openai-agents"
SDK_VERSION = metadata.version("openai-agents")
SDK_SCHEMA_VERSION: str = CURRENT_SCHEMA_VERSION  # what the installed SDK writes
SDK_SCHEMA_VERSIONS: frozenset[str] = frozenset(SUPPORTED_SCHEMA_VERSIONS)  # what it reads
DEFAULT_MAX_TURNS = 10


SdkTool = ToolFacts
"""What cards and the policy know of an SDK tool (the adapters' `ToolFacts`)."""


class OpenAIAgentsEngine:
    """An SDK agent registered with the bot (see the module doc). `replay_policies` give
    a tool that needs approval its replay policy (default `manual`), `review_fields` the
    arguments its card shows (default all). `context_serializer` and
    `context_deserializer` store a context that is not a mapping (a dataclass: the
    serializer keeps its durable fields, the deserializer rebuilds it, re-injecting
    secrets from where they live)."""

    def __init__(
        self,
        agent: SdkAgent[Any],
        *,
        version: str = "1",
        name: str | None = None,
        replay_policies: Mapping[str, ReplayPolicy | str] | None = None,
        review_fields: Mapping[str, Sequence[str]] | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        context_serializer: ContextSerializer | None = None,
        context_deserializer: ContextDeserializer | None = None,
    ) -> None:
        self._name = name or agent.name
        self._version = version
        self.max_turns = max_turns
        if (context_serializer is None) != (context_deserializer is None):
            raise ConfigError(
                f"agent {self._name!r}: give context_serializer and context_deserializer "
                "together (what one writes the other must rebuild)"
            )
        self._serializer = context_serializer
        self._deserializer = context_deserializer
        tools = _function_tools(agent, self._name)
        self._tools = tool_facts(
            self._name,
            [tool.name for tool in tools],
            replay_policies=replay_policies,
            review_fields=review_fields,
        )
        wrapped = [wrap_tool(tool, policy=self._tools[tool.name].replay_policy) for tool in tools]
        self._agent = agent.clone(tools=list(wrapped))

    # -- what the registry, cards and the policy read --------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> str:
        return self._version

    @property
    def amendable(self) -> bool:
        """No: the SDK has no clean way to override a call's arguments."""
        return False

    @property
    def sdk_agent(self) -> SdkAgent[Any]:
        """The SDK agent as it runs: its approval-needing tools go through the ledger."""
        return self._agent

    def tool_names(self) -> list[str]:
        return list(self._tools)

    def tool_named(self, name: str) -> ToolFacts | None:
        return self._tools.get(name)

    # -- states -----------------------------------------------------------------------------

    def new_state(self, task: str, *, run_id: str, context: Any = None) -> ExternalRunState:
        stored = self._stored(context)
        return ExternalRunState(
            run_id=run_id,
            agent_name=self._name,
            agent_version=self._version,
            engine=_engine_info(SDK_SCHEMA_VERSION),
            engine_state={"input": [{"role": "user", "content": task}], "context": stored},
        )

    def check_state(self, state: AgentRun) -> None:
        self._checked(state)

    def _checked(self, state: AgentRun) -> ExternalRunState:
        return checked_state(
            state,
            engine=ENGINE_NAME,
            framework="OpenAI Agents SDK",
            reads=SDK_SCHEMA_VERSIONS,
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
        site = ToolSite(
            state=state,
            journal=journal,
            dependencies=dependencies,
            context=deserialize_context(_stored_context(state), deserializer=self._deserializer),
        )
        start = await self._start(state, site)
        try:
            with site_scope(site):
                result = await Runner.run(
                    self._agent,
                    start,
                    context=None if isinstance(start, RunState) else site.context,
                    max_turns=self.max_turns,
                    run_config=RunConfig(tracing_disabled=True),
                )
        except MaxTurnsExceeded:
            stopped = state.finished(state.engine_state, None)
            return EngineResult(
                final_output=None, interruptions=[], state=stopped, outcome="max_turns"
            )
        except Exception as error:
            if site.unsettled:  # the run stops at a call a human must reconcile
                return site.stopped_uncertain()
            ours = _our_error(error)
            if ours is not None:  # the ledger's (a database that may recover: retried)
                raise ours from error
            raise ModelError(f"the OpenAI Agents SDK run failed: {error}") from error
        return self._outcome(state, result, max_tool_calls_per_turn)

    def _stored(self, context: Any) -> dict[str, Any] | None:
        """A run context as stored: a mapping, or through the engine's serializer."""
        return serialize_context(
            context, serializer=self._serializer, strict=True, owner="OpenAIAgentsEngine"
        )

    async def _start(self, state: ExternalRunState, site: ToolSite) -> Any:
        """What `Runner.run` starts from: the restored SDK state with the decisions
        applied, or the input list (with a thread reply appended)."""
        engine_state = state.engine_state
        if not isinstance(engine_state, dict):
            raise RunStateError(f"run {state.run_id}: its SDK state is not an object")
        if "paused" in engine_state:
            sdk_state = await self._restore(state, engine_state["paused"])
            await _apply_decisions(sdk_state, state, site)
            return sdk_state
        items = list(engine_state.get("input") or [])
        if state.new_input is not None:
            items.append({"role": "user", "content": state.new_input})
        return items

    async def _restore(self, state: ExternalRunState, paused: Any) -> RunState[Any, Any]:
        try:
            return await RunState.from_json(
                self._agent, paused, context_deserializer=self._deserializer, strict_context=True
            )
        except Exception as error:
            raise StateUnreadableError(
                f"the installed openai-agents {SDK_VERSION} cannot read run {state.run_id}'s "
                f"state (written by openai-agents {state.engine.version}, schema "
                f"{state.engine.schema_version}): {error}"
            ) from error

    def _outcome(self, state: ExternalRunState, result: Any, limit: int | None) -> EngineResult:
        if result.interruptions:
            calls = [_pending(state, item) for item in result.interruptions]
            if limit is not None and len(calls) > limit:
                raise LimitError(
                    f"the model asked for {len(calls)} tool calls in one turn; the limit "
                    f"is {limit} per turn, so none of them ran"
                )
            written = result.to_state().to_json(
                context_serializer=self._serializer, strict_context=True
            )
            _check_stored_context(written)
            engine = _engine_info(str(written.get("$schemaVersion", SDK_SCHEMA_VERSION)))
            paused = state.paused({"paused": written}, calls, engine=engine)
            return EngineResult(
                final_output=None,
                interruptions=paused.get_interruptions(),
                state=paused,
                outcome="paused",
            )
        answer = result.final_output
        text = answer if isinstance(answer, str) or answer is None else json.dumps(answer)
        idle = {
            "input": result.to_input_list(),
            "context": self._stored(result.context_wrapper.context),
        }
        done = state.finished(idle, text, engine=_engine_info(SDK_SCHEMA_VERSION))
        return EngineResult(final_output=text, interruptions=[], state=done, outcome="completed")


def _our_error(error: BaseException) -> ApprovalsError | None:
    """The bot's own error behind what the SDK raised (it wraps a tool's exception)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ApprovalsError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


async def _apply_decisions(
    sdk_state: RunState[Any, Any], state: ExternalRunState, site: ToolSite
) -> None:
    """Tell the restored SDK state what people decided, each call's digest re-checked
    against the restored call first (RunStateError, and nothing runs, if it differs)."""
    for item in sdk_state.get_interruptions():
        raw = _function_call(item)
        pending = check_restored(
            state,
            tool_call_id=raw["call_id"],
            tool_name=str(item.tool_name),
            arguments=raw["arguments"],
            framework="SDK",
        )
        verdict = await verdict_for(site, pending)
        if isinstance(verdict, Refuse):
            sdk_state.reject(item, rejection_message=verdict.message)
        else:
            sdk_state.approve(item)


def _pending(state: ExternalRunState, item: ToolApprovalItem) -> PendingCall:
    raw = _function_call(item)
    return PendingCall(
        tool_call_id=raw["call_id"],
        tool_name=str(item.tool_name),
        arguments=raw["arguments"],
        execution_key=state.key_for(raw["call_id"]),
        status="approval",
    )


def _function_call(item: ToolApprovalItem) -> dict[str, Any]:
    """The call id and parsed arguments of a function tool's approval item."""
    raw = item.raw_item
    call_id = getattr(raw, "call_id", None)
    text = getattr(raw, "arguments", None)
    if not isinstance(call_id, str) or not isinstance(text, str):
        raise RunStateError(
            f"tool {item.tool_name!r} asks for approval outside a function call; only "
            "function tools' approvals are supported"
        )
    try:
        arguments = json.loads(text or "{}")
    except ValueError as error:
        raise RunStateError(f"call {call_id}'s arguments are not JSON: {error}") from error
    if not isinstance(arguments, dict):
        raise RunStateError(f"call {call_id}'s arguments are not a JSON object")
    return {"call_id": call_id, "arguments": arguments}


def _function_tools(agent: SdkAgent[Any], name: str) -> list[FunctionTool]:
    if agent.handoffs:
        raise ConfigError(
            f"agent {name!r}: handoffs are not supported (the other agents' tools would "
            "run outside the ledger)"
        )
    tools = []
    for tool in agent.tools:
        if not isinstance(tool, FunctionTool):
            raise ConfigError(
                f"agent {name!r}: tool {getattr(tool, 'name', tool)!r} is not a function "
                "tool; only function tools are supported"
            )
        tools.append(tool)
    return tools


def _engine_info(schema_version: str) -> EngineInfo:
    return EngineInfo(name=ENGINE_NAME, version=SDK_VERSION, schema_version=schema_version)


def _check_stored_context(written: dict[str, Any]) -> None:
    """Refuse an SDK state whose stored context holds a credential (as the run core
    refuses one), naming its path, never the value."""
    entry = written.get("context")
    stored = entry.get("context") if isinstance(entry, dict) else None
    if isinstance(stored, dict):
        serialize_context(stored, serializer=None, strict=True, owner="OpenAIAgentsEngine")


def _stored_context(state: ExternalRunState) -> Any:
    engine_state = state.engine_state
    if isinstance(engine_state, dict) and "input" in engine_state:
        return engine_state.get("context")
    return None
