"""McpEngine: each gated MCP call as a run the approval service drives like any other.

A run of agent `mcp` is one client's call of one upstream tool. Its state is an
`ExternalRunState` whose engine state is the call's `CallRecord` (bot.mcp.calls). So the
call gets everything a native call gets: a card with its redacted arguments and keyed
digest, the policy's approvers, quorum and expiry, revocation, reading in full, approve
with changes, the execution ledger, recovery and the audit trail.

1. The first run pauses at once on the call: its tool call id is `mcp-<definition
   digest>`, which the execution key and so the call's digest bind, so an approval is
   for the tool as its upstream defined it when the call came (and its card names the
   client, the upstream and what the tool says it does).
2. Once decided, a rejection (or expiry, revocation) finishes the run with an error
   result carrying the message the reviewer wrote for the client (never the reason).
3. An approval first reads the upstream's listing again: a tool whose definition changed
   since is not run; its approval is voided (the service's journal revokes it before
   anything is claimed, and its card says it is void and why) and the call is asked
   again under the new definition, its new card saying what changed. Otherwise the
   call's execution key is claimed in the journal (a call dispatched before a crash is
   found there: `manual` replay leaves it uncertain for a person, never a silent
   repeat; one whose approval could not be voided because it had started is settled
   there too, and a redefined tool is then not run, "not run" recorded, and asked
   again). Only then is the call sent, once; its result is recorded in the ledger and
   kept (sealed) in the state for the client. A call that timed out or lost its
   connection after it was sent is uncertain; one that could not be sent is "not run".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError, RunStateError, StateUnreadableError
from bot.mcp.calls import MCP_AGENT, MCP_AGENT_VERSION, CallRecord, GatedCall, text_result
from bot.mcp.config import GatewayConfig
from bot.mcp.execution import CallExecution, UpstreamSource
from bot.mcp.outcomes import ENGINE, answered, ask, finished
from bot.mcp.schemas import Checks
from bot.mcp.telemetry import McpMetrics
from bot.runtime import (
    AbortCall,
    AgentRun,
    ApprovedCall,
    EngineResult,
    ExternalRunState,
    Journal,
    PendingCall,
    RejectedCall,
    RetryCall,
    UnknownCallError,
    VerifiedResult,
)
from bot.runtime.decisions import ABORTED_MESSAGE

NO_REPLIES = "An MCP call's thread takes no replies: the client that asked has its answer."


@dataclass(frozen=True, kw_only=True)
class McpTool:
    """What cards and the policy know of an exposed tool."""

    name: str
    review_fields: tuple[str, ...] | None = None


class McpEngine:
    """The gateway's engine (see the module doc), registered as agent `mcp` v1."""

    def __init__(
        self, upstreams: UpstreamSource, config: GatewayConfig, metrics: McpMetrics | None = None
    ) -> None:
        self._upstreams = upstreams
        self._config = config
        self._execution = CallExecution(upstreams, config, metrics or McpMetrics(None))
        self._expected: set[str] = set()
        self._checks = Checks()

    @property
    def name(self) -> str:
        return MCP_AGENT

    @property
    def version(self) -> str:
        return MCP_AGENT_VERSION

    @property
    def amendable(self) -> bool:
        """Yes, for the tools whose input schema can be checked (`can_amend`)."""
        return True

    def expect(self, names: Iterable[str]) -> list[str]:
        """Take these names (a policy's [tools.*] tables) as tools of ours when they name
        a configured upstream: its listing is known only once it answers. Returns the
        names that are not ours."""
        ours = {name for name in names if self._config.upstream_of(name) is not None}
        self._expected |= ours
        return sorted(set(names) - ours)

    def tool_names(self) -> list[str]:
        return sorted(set(self._upstreams.exposed_names()) | self._expected)

    def tool_named(self, name: str) -> McpTool | None:
        return McpTool(name=name) if self._config.upstream_of(name) is not None else None

    # -- states -----------------------------------------------------------------------------

    def new_state(self, task: str, *, run_id: str, context: Any = None) -> ExternalRunState:
        if not isinstance(context, GatedCall):
            raise InputError("an MCP gateway run starts from a gated call, not a task")
        return ExternalRunState(
            run_id=run_id,
            agent_name=MCP_AGENT,
            agent_version=MCP_AGENT_VERSION,
            engine=ENGINE,
            engine_state=CallRecord.of(context).to_json(),
        )

    def check_state(self, state: AgentRun) -> None:
        self._record(state)

    def _record(self, state: AgentRun) -> CallRecord:
        if not isinstance(state, ExternalRunState) or state.engine.name != ENGINE.name:
            raise StateUnreadableError(f"run {state.run_id} is not an MCP gateway call")
        try:
            record = CallRecord.from_json(state.engine_state)
        except (KeyError, TypeError, ValueError) as error:
            raise StateUnreadableError(
                f"run {state.run_id}: its MCP call record is unreadable ({error})"
            ) from None
        if record.upstream not in self._config.upstreams:
            raise StateUnreadableError(
                f"run {state.run_id} calls upstream {record.upstream!r}, which the gateway's "
                "file no longer names"
            )
        return record

    # -- approve with changes ----------------------------------------------------------------

    def can_amend(self, state: AgentRun, call: PendingCall) -> bool:
        record = self._record(state)
        schema = record.definition.get("inputSchema")
        return isinstance(schema, Mapping) and (
            self._checks.validator(record.definition_digest, schema) is not None
        )

    def check_arguments(
        self, state: AgentRun, call: PendingCall, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        record = self._record(state)
        schema = record.definition.get("inputSchema")
        if not isinstance(schema, Mapping) or not self._checks.check(
            record.definition_digest, schema, arguments
        ):
            raise InputError(f"the input schema of {call.tool_name} cannot be checked")
        return dict(arguments)

    def amended(self, state: AgentRun, tool_call_id: str, arguments: Mapping[str, Any]) -> AgentRun:
        if not isinstance(state, ExternalRunState):
            raise RunStateError(f"run {state.run_id} is not an MCP gateway call")
        return state.with_arguments(tool_call_id, arguments)

    # -- running ----------------------------------------------------------------------------

    async def run(
        self,
        state: AgentRun,
        *,
        journal: Journal,
        dependencies: Mapping[str, Any],
        max_tool_calls_per_turn: int | None = None,
    ) -> EngineResult:
        record = self._record(state)
        assert isinstance(state, ExternalRunState)  # _record checked
        if state.new_input is not None:  # a thread reply: nothing for the client
            return finished(state, record, final_output=NO_REPLIES)
        pending = state.pending_calls()
        if not pending:
            if record.result is not None:
                return finished(state, record)
            return ask(state, record)
        call = pending[0]
        decision = state.decision_for(call)
        if isinstance(decision, RejectedCall):
            return answered(state, record, text_result(decision.message, is_error=True), "rejected")
        if isinstance(decision, AbortCall):
            return answered(state, record, text_result(ABORTED_MESSAGE, is_error=True), "not_run")
        if isinstance(decision, VerifiedResult):
            # a journal that never saw the key has nothing to reconcile
            with contextlib.suppress(UnknownCallError):
                await journal.resolve_with_result(
                    execution_key=call.execution_key, result=decision.result
                )
            return answered(
                state, record, text_result(decision.result, is_error=False), "reconciled"
            )
        if isinstance(decision, ApprovedCall | RetryCall):
            return await self._execution.execute(
                state, record, call, journal, redispatch=isinstance(decision, RetryCall)
            )
        raise RunStateError(f"run {state.run_id}: call {call.tool_call_id} is not decided yet")
