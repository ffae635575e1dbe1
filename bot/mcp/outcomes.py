"""What a gated MCP call's run comes to, as the engine answers the service: paused on the
call for a decision (under the definition it was asked with), finished with the result
the client gets, or waiting on an uncertain call for a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bot.mcp.calls import CallRecord, Outcome
from bot.mcp.messages import call_notes, summary
from bot.runtime import EngineInfo, EngineResult, ExternalRunState, PendingCall

ENGINE = EngineInfo(name="mcp", version="1", schema_version="1")
CALL_ID_PREFIX = "mcp-"


def finished(
    state: ExternalRunState, record: CallRecord, *, final_output: str | None = None
) -> EngineResult:
    text = final_output if final_output is not None else summary(record)
    done = state.finished(record.to_json(), text, engine=ENGINE)
    return EngineResult(final_output=text, interruptions=[], state=done, outcome="completed")


def uncertain(state: ExternalRunState, call: PendingCall) -> EngineResult:
    return waiting(state.uncertain([call.execution_key]))


def waiting(state: ExternalRunState) -> EngineResult:
    """The run pauses on `state`'s calls (for a decision, or a reconciliation)."""
    return EngineResult(
        final_output=None, interruptions=state.get_interruptions(), state=state, outcome="paused"
    )


def ask(
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
    return waiting(
        state.paused(record.to_json(), [call], engine=ENGINE, notes={call_id: call_notes(record)})
    )


def answered(
    state: ExternalRunState,
    record: CallRecord,
    result: dict[str, Any],
    outcome: Outcome,
) -> EngineResult:
    done = replace(record, result=result, outcome=outcome)
    return finished(state, done, final_output=summary(done))
