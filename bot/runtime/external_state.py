"""ExternalRunState: the durable state of a run that another engine runs (an agent
framework's adapter: OpenAI Agents SDK, LangGraph, Pydantic AI), with the bot's own
record of its pauses beside the engine's state.

The engine's own state (`engine_state`, e.g. the SDK's `RunState.to_json()`) is opaque
JSON here: only its engine reads and writes it. Beside it the bot keeps what it needs
whatever the engine: the calls the run waits on (each with its execution key and keyed
digest), the decisions people took on them (applied to the engine's state only when the
run resumes, and re-checked against it there), who decided and why (never shown to the
model: it sees a rejection's message only), and the engine's name, version and state
schema version. The store seals the whole JSON like a RunState's.

Execution keys are `execution_key(run_id, pause, tool_call_id)`: `pause` counts the
run's pauses, so a provider that reuses tool call ids across turns still gives every
call its own key, and a run resumed twice from the same stored state computes the same
keys (the ledger then runs each call at most once).

An engine may attach notes to a pending call (`paused(..., notes=...)`): lines a
reviewer should read beside the arguments (why the call is asked again, say). They are
stored with the state and shown on the call's card.

Approve with changes: an engine that can run a call with other arguments (an
`ArgumentEditor`) gives the call an approver's arguments (`amend_arguments`, or a copy:
`with_arguments`); the arguments the engine asked with are kept (`requested_digest`) to
check its restored state against, and `amended_arguments` hands the changed ones back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import orjson

from bot.canonical import call_digest
from bot.errors import (
    InputError,
    RunStateError,
)
from bot.runtime.decisions import (
    DEFAULT_REJECTION_MESSAGE,
    ApprovalMetadata,
    ApprovedCall,
    Decision,
    PendingCall,
    RejectedCall,
    Resolution,
    execution_key,
)
from bot.runtime.engine import ENGINE_KEY, EngineInfo
from bot.runtime.external_fields import EXTERNAL_SCHEMA_VERSION, read_fields
from bot.runtime.pending import PendingCalls
from bot.runtime.state_decisions import audit_note
from bot.runtime.state_format import (
    SCHEMA_VERSION_KEY,
    decisions_to_json,
    metadata_to_json,
    new_digest_key,
)


class ExternalRunState:
    """See the module doc. Decisions follow RunState's rules: an approval waits for
    approve/reject, an uncertain call for resolve; a call is decided once."""

    def __init__(
        self,
        *,
        run_id: str,
        agent_name: str,
        agent_version: str,
        engine: EngineInfo,
        engine_state: Any,
        pauses: int = 0,
        pending: Iterable[PendingCall] = (),
        decisions: Mapping[str, Decision] | None = None,
        approval_metadata: Mapping[str, ApprovalMetadata] | None = None,
        digest_key: bytes | None = None,
        final_output: str | None = None,
        new_input: str | None = None,
        notes: Mapping[str, Sequence[str]] | None = None,
        requested: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.run_id = run_id
        self.agent_name = agent_name
        self.agent_version = agent_version
        self._engine = engine
        self.engine_state = engine_state
        self.pauses = pauses
        self._calls = PendingCalls(
            run_id,
            calls={call.tool_call_id: call for call in pending},
            decisions=dict(decisions or {}),
            always={},  # standing decisions are the service's, never an engine run's
        )
        self.approval_metadata: dict[str, ApprovalMetadata] = dict(approval_metadata or {})
        self._digest_key = new_digest_key() if digest_key is None else bytes(digest_key)
        self._final_output = final_output
        self.new_input = new_input
        self._notes = {
            call_id: tuple(lines)
            for call_id, lines in (notes or {}).items()
            if call_id in self._calls.calls and lines
        }
        # the arguments the engine asked with, of the calls an approver changed
        self._requested: dict[str, dict[str, Any]] = {
            call_id: dict(arguments) for call_id, arguments in (requested or {}).items()
        }

    # -- what the service reads -----------------------------------------------------------

    @property
    def schema_version(self) -> str:
        return EXTERNAL_SCHEMA_VERSION

    @property
    def engine(self) -> EngineInfo:
        return self._engine

    @property
    def final_output(self) -> str | None:
        return self._final_output

    def pending_calls(self) -> list[PendingCall]:
        return list(self._calls.calls.values())

    def get_interruptions(self) -> list[PendingCall]:
        return self._calls.undecided()

    def decision_for(self, call: PendingCall | str) -> Decision | None:
        return self._calls.decision_for(call)

    def notes_for(self, call: PendingCall | str) -> tuple[str, ...]:
        """What the engine asked a reviewer to read beside this call's arguments."""
        return self._notes.get(self._calls.find(call).tool_call_id, ())

    def call_digest(self, call: PendingCall | str) -> str:
        pending = self._calls.find(call)
        return self.digest_of(
            tool_name=pending.tool_name,
            execution_key=pending.execution_key,
            arguments=pending.arguments,
        )

    def digest_of(self, *, tool_name: str, execution_key: str, arguments: Mapping[str, Any]) -> str:
        """The keyed digest of a call of this run (bot.canonical.call_digest)."""
        return call_digest(
            self._digest_key,
            agent_name=self.agent_name,
            agent_version=self.agent_version,
            tool_name=tool_name,
            execution_key=execution_key,
            arguments=arguments,
        )

    def requested_digest(self, call: PendingCall | str) -> str:
        """The keyed digest of the call as the engine asked for it (before an approver
        changed its arguments): what a restored engine state is checked against."""
        pending = self._calls.find(call)
        return self.digest_of(
            tool_name=pending.tool_name,
            execution_key=pending.execution_key,
            arguments=self._requested.get(pending.tool_call_id, pending.arguments),
        )

    def amended_arguments(self, call: PendingCall | str) -> dict[str, Any] | None:
        """The arguments an approver changed the call to (None: unchanged)."""
        pending = self._calls.find(call)
        if pending.tool_call_id not in self._requested:
            return None
        return dict(pending.arguments)

    # -- what people decide ---------------------------------------------------------------

    def amend_arguments(self, tool_call_id: str, arguments: Mapping[str, Any]) -> None:
        """Give a call waiting for approval new arguments (approve with changes): its
        digest is computed from them from now on, any decision on it is dropped, and the
        arguments the engine asked with are kept to check its restored state against.
        Only an engine that can run a call with other arguments offers it."""
        pending = self._calls.decidable(tool_call_id, action="amended")
        self._requested.setdefault(pending.tool_call_id, dict(pending.arguments))
        self._calls.put(replace(pending, arguments=orjson.loads(orjson.dumps(dict(arguments)))))

    def with_arguments(self, tool_call_id: str, arguments: Mapping[str, Any]) -> ExternalRunState:
        """A copy in which `amend_arguments` gave the call these arguments (what an
        `ArgumentEditor` engine's `amended` returns); this state stays as it was. The
        call's execution key and notes stay."""
        changed = self._copy()
        changed.amend_arguments(tool_call_id, arguments)
        return changed

    def approve(
        self,
        call: PendingCall | str,
        *,
        always: bool = False,
        approver_id: str | None = None,
        reason: str | None = None,
        decided_at: datetime | None = None,
    ) -> None:
        """Approve a call waiting for approval (`always` is the service's standing
        decisions' business, never the engine's: refused here)."""
        pending = self._decidable(call, always=always, action="approved")
        self._calls.decisions[pending.tool_call_id] = ApprovedCall()
        self._note(pending, approver_id, reason, decided_at)

    def reject(
        self,
        call: PendingCall | str,
        *,
        message: str | None = None,
        always: bool = False,
        approver_id: str | None = None,
        reason: str | None = None,
        decided_at: datetime | None = None,
    ) -> None:
        """Reject a call: the model sees `message` (or the neutral default) only."""
        if message is not None and not isinstance(message, str):
            raise InputError("a rejection message must be a string")
        pending = self._decidable(call, always=always, action="rejected")
        self._calls.decisions[pending.tool_call_id] = RejectedCall(
            message=message or DEFAULT_REJECTION_MESSAGE
        )
        self._note(pending, approver_id, reason, decided_at)

    def resolve(
        self,
        call_or_key: PendingCall | str,
        resolution: Resolution,
        *,
        approver_id: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Reconcile an uncertain call (VerifiedResult, RetryCall or AbortCall)."""
        pending = self._calls.resolve(call_or_key, resolution)
        self._note(pending, approver_id, reason, None)

    def append_user_message(self, text: str) -> None:
        """Follow-up input for an idle run; the engine answers it on its next run."""
        if self._calls.calls:
            raise RunStateError("the run is waiting on tool calls; decide those first")
        self.new_input = text

    # -- what the engine does -------------------------------------------------------------

    def key_for(self, tool_call_id: str) -> str:
        """The execution key a call asked in the run's current stretch gets."""
        return execution_key(self.run_id, self.pauses, tool_call_id)

    def paused(
        self,
        engine_state: Any,
        calls: Iterable[PendingCall],
        *,
        engine: EngineInfo,
        notes: Mapping[str, Sequence[str]] | None = None,
    ) -> ExternalRunState:
        """A copy paused on `calls` (asked in the stretch that just ended), its engine
        state written by `engine`; `notes` by tool call id (see the module doc)."""
        return self._copy(
            engine_state=engine_state,
            engine=engine,
            pauses=self.pauses + 1,
            pending=calls,
            decisions={},
            new_input=None,
            notes=notes or {},
            requested={},
        )

    def uncertain(self, keys: Iterable[str]) -> ExternalRunState:
        """A copy of this state (before the run) with these calls' outcomes uncertain:
        dispatched, no result recorded; a human reconciles them."""
        keys = set(keys)
        calls = [
            replace(call, status="uncertain") if call.execution_key in keys else call
            for call in self._calls.calls.values()
        ]
        decisions = {
            call_id: decision
            for call_id, decision in self._calls.decisions.items()
            if self._calls.calls[call_id].execution_key not in keys
        }
        return self._copy(pending=calls, decisions=decisions)

    def finished(
        self, engine_state: Any, final_output: str | None, *, engine: EngineInfo | None = None
    ) -> ExternalRunState:
        """A copy with nothing pending: the run answered (or stopped at its turn limit)."""
        return self._copy(
            engine=engine or self._engine,
            engine_state=engine_state,
            pending=(),
            decisions={},
            final_output=final_output,
            new_input=None,
            requested={},
        )

    def _copy(self, **changes: Any) -> ExternalRunState:
        fields: dict[str, Any] = {
            "run_id": self.run_id,
            "agent_name": self.agent_name,
            "agent_version": self.agent_version,
            "engine": self._engine,
            "engine_state": self.engine_state,
            "pauses": self.pauses,
            "pending": self._calls.calls.values(),
            "decisions": self._calls.decisions,
            "approval_metadata": self.approval_metadata,
            "digest_key": self._digest_key,
            "final_output": self._final_output,
            "new_input": self.new_input,
            "notes": self._notes,
            "requested": self._requested,
        }
        return ExternalRunState(**{**fields, **changes})

    # -- helpers --------------------------------------------------------------------------

    def _decidable(self, call: PendingCall | str, *, always: bool, action: str) -> PendingCall:
        if always:
            raise InputError(
                "an engine's run takes no always-decisions; the service keeps standing ones"
            )
        return self._calls.decidable(call, action=action)

    def _note(
        self,
        pending: PendingCall,
        approver_id: str | None,
        reason: str | None,
        at: datetime | None,
    ) -> None:
        note = audit_note(approver_id=approver_id, reason=reason, at=at)
        if note is not None:
            self.approval_metadata[pending.tool_call_id] = note

    # -- the wire -------------------------------------------------------------------------

    def to_json(self) -> str:
        payload = {
            SCHEMA_VERSION_KEY: EXTERNAL_SCHEMA_VERSION,
            ENGINE_KEY: {
                "name": self._engine.name,
                "version": self._engine.version,
                "schema_version": self._engine.schema_version,
            },
            "run_id": self.run_id,
            "agent_name": self.agent_name,
            "agent_version": self.agent_version,
            "pauses": self.pauses,
            "pending_calls": list(self._calls.calls.values()),
            "decisions": decisions_to_json(self._calls.decisions),
            "approval_metadata": metadata_to_json(self.approval_metadata),
            "digest_key": self._digest_key.hex(),
            "final_output": self._final_output,
            "new_input": self.new_input,
            "call_notes": {call_id: list(lines) for call_id, lines in self._notes.items()},
            "requested_arguments": self._requested,
            "engine_state": self.engine_state,
        }
        try:
            return orjson.dumps(payload).decode()
        except orjson.JSONEncodeError as error:
            raise RunStateError(
                f"the run state holds a value JSON cannot encode: {error}"
            ) from error

    @classmethod
    def from_json(cls, text: str | bytes) -> ExternalRunState:
        try:
            payload = orjson.loads(text)
        except orjson.JSONDecodeError as error:
            raise RunStateError(f"a run state must be JSON text: {error}") from error
        return cls.from_payload(payload)

    @classmethod
    def from_payload(cls, payload: Any) -> ExternalRunState:
        """Read a parsed payload, every field checked (RunStateError naming the field)."""
        return cls(**read_fields(payload))

    def __repr__(self) -> str:
        return (
            f"ExternalRunState(run_id={self.run_id!r}, agent={self.agent_name!r} "
            f"v{self.agent_version}, engine={self._engine.name} {self._engine.version}, "
            f"pauses={self.pauses}, pending={list(self._calls.calls)})"
        )
