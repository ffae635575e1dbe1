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
from dataclasses import dataclass, replace
from typing import Any, Protocol

import orjson

from bot.errors import InputError, RunStateError, StateUnreadableError, UpstreamError
from bot.mcp.calls import (
    MCP_AGENT,
    MCP_AGENT_VERSION,
    CallRecord,
    GatedCall,
    Outcome,
    text_result,
)
from bot.mcp.catalog import ListedTool, changed_fields
from bot.mcp.config import GatewayConfig, UpstreamConfig
from bot.mcp.messages import (
    call_notes,
    not_listed,
    redefined_why,
    summary,
    with_change_note,
)
from bot.mcp.schemas import Checks
from bot.mcp.telemetry import McpMetrics
from bot.runtime import (
    AbortCall,
    AgentRun,
    ApprovedCall,
    EngineInfo,
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
from bot.runtime.journal import Claim, Fresh, Interrupted, Recorded, VoidingJournal

ENGINE = EngineInfo(name="mcp", version="1", schema_version="1")
CALL_ID_PREFIX = "mcp-"
NO_REPLIES = "An MCP call's thread takes no replies: the client that asked has its answer."
_DESCRIPTION_SHOWN = 300


class UpstreamSource(Protocol):
    """What the engine needs of the upstream connections (bot.mcp.upstreams)."""

    def listed(self, exposed: str) -> ListedTool | None:
        """The tool as its upstream last listed it (None: not listed)."""
        ...

    def exposed_names(self) -> list[str]: ...

    async def fresh_definition(self, upstream: str, tool: str) -> ListedTool | None:
        """The tool as its upstream lists it now (None: no longer listed);
        UpstreamError (not sent) when the upstream cannot answer."""
        ...

    async def call(self, upstream: str, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The upstream's `CallToolResult` (wire JSON); UpstreamError when it did not
        answer (`sent`: whether the call reached it)."""
        ...


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
        self._metrics = metrics or McpMetrics(None)
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
            return _finished(state, record, final_output=NO_REPLIES)
        pending = state.pending_calls()
        if not pending:
            if record.result is not None:
                return _finished(state, record)
            return self._ask(state, record)
        call = pending[0]
        decision = state.decision_for(call)
        if isinstance(decision, RejectedCall):
            return self._answered(
                state, record, text_result(decision.message, is_error=True), "rejected"
            )
        if isinstance(decision, AbortCall):
            return self._answered(
                state, record, text_result(ABORTED_MESSAGE, is_error=True), "not_run"
            )
        if isinstance(decision, VerifiedResult):
            # a journal that never saw the key has nothing to reconcile
            with contextlib.suppress(UnknownCallError):
                await journal.resolve_with_result(
                    execution_key=call.execution_key, result=decision.result
                )
            return self._answered(
                state, record, text_result(decision.result, is_error=False), "reconciled"
            )
        if isinstance(decision, ApprovedCall | RetryCall):
            return await self._execute(
                state, record, call, journal, redispatch=isinstance(decision, RetryCall)
            )
        raise RunStateError(f"run {state.run_id}: call {call.tool_call_id} is not decided yet")

    def _ask(
        self,
        state: ExternalRunState,
        record: CallRecord,
        arguments: Mapping[str, Any] | None = None,
    ) -> EngineResult:
        """Pause on the call, under the definition `record` holds."""
        call_id = CALL_ID_PREFIX + record.definition_digest
        call = PendingCall(
            tool_call_id=call_id,
            tool_name=record.exposed,
            arguments=dict(record.asked if arguments is None else arguments),
            execution_key=state.key_for(call_id),
            status="approval",
        )
        return _waiting(
            state.paused(
                record.to_json(), [call], engine=ENGINE, notes={call_id: call_notes(record)}
            )
        )

    async def _execute(
        self,
        state: ExternalRunState,
        record: CallRecord,
        call: PendingCall,
        journal: Journal,
        *,
        redispatch: bool,
    ) -> EngineResult:
        upstream = self._config.upstreams[record.upstream]
        # The listing is read before the claim: an approval of a tool since redefined is
        # voided while nothing is claimed (its card says so), and the call asked again.
        live = await self._listing(record)
        if isinstance(live, ListedTool) and live.digest != record.definition_digest:
            redefined = _redefined(record, live)
            if await _voided(journal, call, redefined):
                return self._ask(state, redefined, call.arguments)
        claim = await self._claim(state, call, journal, upstream, redispatch=redispatch)
        if isinstance(claim, Recorded):
            reused, how = _ledger_result(claim)
            return self._answered(state, record, with_change_note(reused, record, call), how)
        if not isinstance(claim, Fresh):
            return _uncertain(state, call)
        if not isinstance(live, ListedTool):
            why = not_listed(record, live)
            return await self._not_run(state, record, call, journal, claim, why)
        if live.digest != record.definition_digest:  # not voided (a journal that cannot)
            redefined = _redefined(record, live)
            why = f"Not run: {redefined_why(redefined)}."
            await _record(journal, call, claim, text_result(why, is_error=True))
            return self._ask(state, redefined, call.arguments)
        self._metrics.decision(record.upstream, "approved")
        try:
            result = await self._upstreams.call(record.upstream, record.tool, call.arguments)
        except UpstreamError as error:
            if error.sent:
                await journal.mark_uncertain(execution_key=call.execution_key)
                return _uncertain(state, call)
            why = f"Not run: upstream {record.upstream} could not be reached ({error})."
            return await self._not_run(state, record, call, journal, claim, why)
        await _record(journal, call, claim, result)
        outcome: Outcome = "upstream_error" if result.get("isError") else "executed"
        return self._answered(state, record, with_change_note(result, record, call), outcome)

    async def _listing(self, record: CallRecord) -> ListedTool | UpstreamError | None:
        """The tool as its upstream lists it now (None: no longer listed), or why that
        could not be read."""
        try:
            return await self._upstreams.fresh_definition(record.upstream, record.tool)
        except UpstreamError as error:
            return error

    async def _claim(
        self,
        state: ExternalRunState,
        call: PendingCall,
        journal: Journal,
        upstream: UpstreamConfig,
        *,
        redispatch: bool,
    ) -> Claim:
        claim_args: dict[str, Any] = {
            "execution_key": call.execution_key,
            "arguments_digest": state.call_digest(call),
            "run_id": state.run_id,
            "tool_call_id": call.tool_call_id,
            "tool_name": call.tool_name,
        }
        claim = await journal.claim(**claim_args, redispatch=redispatch)
        if isinstance(claim, Interrupted) and upstream.replay == "safe":
            return await journal.claim(**claim_args, redispatch=True)
        if isinstance(claim, Interrupted):
            await journal.mark_uncertain(execution_key=call.execution_key)
        return claim

    async def _not_run(
        self,
        state: ExternalRunState,
        record: CallRecord,
        call: PendingCall,
        journal: Journal,
        claim: Fresh,
        why: str,
    ) -> EngineResult:
        result = text_result(why, is_error=True)
        await _record(journal, call, claim, result)
        return self._answered(state, record, result, "not_run")

    def _answered(
        self,
        state: ExternalRunState,
        record: CallRecord,
        result: dict[str, Any],
        outcome: Outcome,
    ) -> EngineResult:
        done = replace(record, result=result, outcome=outcome)
        return _finished(state, done, final_output=summary(done))


def _finished(
    state: ExternalRunState, record: CallRecord, *, final_output: str | None = None
) -> EngineResult:
    text = final_output if final_output is not None else summary(record)
    done = state.finished(record.to_json(), text, engine=ENGINE)
    return EngineResult(final_output=text, interruptions=[], state=done, outcome="completed")


def _uncertain(state: ExternalRunState, call: PendingCall) -> EngineResult:
    return _waiting(state.uncertain([call.execution_key]))


def _waiting(state: ExternalRunState) -> EngineResult:
    """The run pauses on `state`'s calls (for a decision, or a reconciliation)."""
    return EngineResult(
        final_output=None, interruptions=state.get_interruptions(), state=state, outcome="paused"
    )


async def _record(
    journal: Journal, call: PendingCall, claim: Fresh, result: Mapping[str, Any]
) -> None:
    await journal.record_result(
        execution_key=call.execution_key,
        lease_token=claim.lease_token,
        result=orjson.dumps(result).decode(),
        is_error=bool(result.get("isError")),
    )


def _ledger_result(claim: Recorded) -> tuple[dict[str, Any], Outcome]:
    """A result the ledger recorded: ours (the result's JSON, from a run of this call
    before), or a refusal the service's journal answered ("Not run: ...")."""
    try:
        value = orjson.loads(claim.result)
    except orjson.JSONDecodeError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        return value, "upstream_error" if value.get("isError") else "executed"
    return text_result(claim.result, is_error=True), "not_run"


async def _voided(journal: Journal, call: PendingCall, redefined: CallRecord) -> bool:
    """Whether the call's approval was voided because its tool was redefined (only a
    journal that can void: the service's)."""
    if not isinstance(journal, VoidingJournal):
        return False
    why = redefined_why(redefined)
    return await journal.void_approval(execution_key=call.execution_key, why=why)


def _redefined(record: CallRecord, live: ListedTool) -> CallRecord:
    return replace(
        record,
        definition=dict(live.definition),
        definition_digest=live.digest,
        changed=changed_fields(record.definition, live.definition),
    )
