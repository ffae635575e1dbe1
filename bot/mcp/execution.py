"""Running an approved MCP call once (bot.mcp.engine, step 3): the upstream's listing read
again first (a redefined tool's approval voided, the call asked again), the execution key
claimed in the journal, only then the call sent; its result recorded in the ledger, a
call sent without an answer left uncertain, one that could not be sent "not run".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

import orjson

from bot.errors import UpstreamError
from bot.mcp.calls import CallRecord, Outcome, text_result
from bot.mcp.catalog import ListedTool, changed_fields
from bot.mcp.config import GatewayConfig, UpstreamConfig
from bot.mcp.messages import not_listed, redefined_why, with_change_note
from bot.mcp.outcomes import answered, ask, uncertain
from bot.mcp.telemetry import McpMetrics
from bot.runtime import EngineResult, ExternalRunState, Journal, PendingCall
from bot.runtime.journal import Claim, Fresh, Interrupted, Recorded, VoidingJournal


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


class CallExecution:
    """Sends the approved calls of the gateway's upstreams, each once (see the module doc)."""

    def __init__(
        self, upstreams: UpstreamSource, config: GatewayConfig, metrics: McpMetrics
    ) -> None:
        self._upstreams = upstreams
        self._config = config
        self._metrics = metrics

    async def execute(
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
                return ask(state, redefined, call.arguments)
        claim = await self._claim(state, call, journal, upstream, redispatch=redispatch)
        if isinstance(claim, Recorded):
            reused, how = _ledger_result(claim)
            return answered(state, record, with_change_note(reused, record, call), how)
        if not isinstance(claim, Fresh):
            return uncertain(state, call)
        if not isinstance(live, ListedTool):
            why = not_listed(record, live)
            return await self._not_run(state, record, call, journal, claim, why)
        if live.digest != record.definition_digest:  # not voided (a journal that cannot)
            redefined = _redefined(record, live)
            why = f"Not run: {redefined_why(redefined)}."
            await _record(journal, call, claim, text_result(why, is_error=True))
            return ask(state, redefined, call.arguments)
        return await self._send(state, record, call, journal, claim)

    async def _send(
        self,
        state: ExternalRunState,
        record: CallRecord,
        call: PendingCall,
        journal: Journal,
        claim: Fresh,
    ) -> EngineResult:
        """Send the call, once, under the claim just taken; record what came back (a
        call sent without an answer is uncertain; one that could not be sent, not run)."""
        self._metrics.decision(record.upstream, "approved")
        try:
            result = await self._upstreams.call(record.upstream, record.tool, call.arguments)
        except UpstreamError as error:
            if error.sent:
                await journal.mark_uncertain(execution_key=call.execution_key)
                return uncertain(state, call)
            why = f"Not run: upstream {record.upstream} could not be reached ({error})."
            return await self._not_run(state, record, call, journal, claim, why)
        await _record(journal, call, claim, result)
        outcome: Outcome = "upstream_error" if result.get("isError") else "executed"
        return answered(state, record, with_change_note(result, record, call), outcome)

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
        return answered(state, record, result, "not_run")


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
