"""RunState: the durable pause/resume boundary of an agent run.

It holds the cold state only (identity, history, pending calls, decisions, audit
metadata, the serialized context) as plain JSON-ready data, so `to_json` is a single
encoder call. Agent definitions, tools, models, clients and runtime dependencies never
cross the wire: the Runner matches the state to an agent by name and version.

    state = RunState.from_json(text)
    for call in state.get_interruptions():
        state.approve(call, approver_id="U123", reason="CR-1234")
    result = await Runner.arun(agent, state)

The decisions (`approve`, `reject`, `resolve`) are bot.runtime.state_decisions': `reason`
and `approver_id` are audit only, a rejection's `message` is what the model sees.

Each state carries its run's digest key (random, made with the run): `call_digest(call)`
is the digest a review card shows and the ledger keeps (bot.canonical.call_digest). The
key is part of the state's JSON, which the store only ever writes sealed (AES-GCM); it
is never in the repr, a card, a log or an approval row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import orjson

from bot.canonical import call_digest, legacy_arguments_digest
from bot.errors import RunStateError, UnknownCallError
from bot.runtime.context import check_no_secrets
from bot.runtime.decisions import (
    ApprovalMetadata,
    Decision,
    DeferredToolRequests,
    OutstandingCall,
    PendingCall,
    execution_key,
)
from bot.runtime.engine import EngineInfo
from bot.runtime.model import Item, ToolCallItem, ToolResultItem, unanswered_calls
from bot.runtime.pending import PendingCalls
from bot.runtime.state_decisions import HumanDecisions
from bot.runtime.state_fields import check_consistency, read_history
from bot.runtime.state_format import (
    CURRENT_SCHEMA_VERSION,
    DEFAULT_MAX_TURNS,
    SCHEMA_VERSION_KEY,
    StateFields,
    decisions_to_json,
    metadata_to_json,
    new_digest_key,
    read_payload,
)


class RunState(HumanDecisions):
    """Serializable snapshot of one agent run (see the module docstring)."""

    def __init__(
        self,
        *,
        run_id: str,
        agent_name: str,
        agent_version: str,
        current_turn: int = 0,
        max_turns: int = DEFAULT_MAX_TURNS,
        history: list[Item] | None = None,
        context: dict[str, Any] | None = None,
        pending: Iterable[PendingCall] = (),
        decisions: Mapping[str, Decision] | None = None,
        always: Mapping[str, Decision] | None = None,
        approval_metadata: Mapping[str, ApprovalMetadata] | None = None,
        digest_key: bytes | None = None,
        legacy_digest_calls: Iterable[str] = (),
    ) -> None:
        self.run_id = run_id
        self.agent_name = agent_name
        self.agent_version = agent_version
        self.current_turn = current_turn
        self.max_turns = max_turns
        self.history: list[Item] = read_history([] if history is None else history)
        self.context = context
        self._pending = PendingCalls(
            run_id,
            calls={call.tool_call_id: call for call in pending},
            decisions=dict(decisions or {}),
            always=dict(always or {}),
        )
        self.approval_metadata: dict[str, ApprovalMetadata] = dict(approval_metadata or {})
        self._digest_key = new_digest_key() if digest_key is None else bytes(digest_key)
        self._legacy_digest_calls: set[str] = set(legacy_digest_calls)
        self._check_consistency()

    # -- reading ------------------------------------------------------------------------

    def pending_calls(self) -> list[PendingCall]:
        """Every pending call, decided or not, in the model's order."""
        return list(self._pending.calls.values())

    def get_interruptions(self) -> list[PendingCall]:
        """Pending calls that still need a human: approval or reconciliation."""
        return self._pending.undecided()

    @property
    def deferred_tool_requests(self) -> DeferredToolRequests:
        """Every pending call, decided or not, by status (`.approvals`, `.uncertain`), in
        the model's order."""
        calls = self._pending.calls.values()
        return DeferredToolRequests(
            approvals=[call for call in calls if call.status == "approval"],
            uncertain=[call for call in calls if call.status == "uncertain"],
        )

    def decision_for(self, call: PendingCall | str) -> Decision | None:
        """The decision that applies to a pending call: its own, or for an approval an
        `always` rule of its tool; None while undecided."""
        return self._pending.decision_for(call)

    def always_rule(self, tool_name: str) -> Decision | None:
        """The remembered `always=True` decision for a tool, if any."""
        return self._pending.always.get(tool_name)

    @property
    def final_output(self) -> str | None:
        """The final answer when the last item is a model turn without tool calls."""
        if self.history and self.history[-1]["type"] == "assistant":
            last = self.history[-1]
            if not last["tool_calls"]:
                return last["content"]
        return None

    @property
    def legacy_digest_calls(self) -> frozenset[str]:
        """Tool call ids whose digest stays the unkeyed one of a 1.0 state (they were
        pending when the state was migrated, and their approval rows carry it)."""
        return frozenset(self._legacy_digest_calls)

    def call_digest(self, call: PendingCall | str) -> str:
        """The digest of a pending call: what its card shows and its approval must match."""
        pending = self._pending.find(call)
        return self.digest_of(
            tool_call_id=pending.tool_call_id,
            tool_name=pending.tool_name,
            execution_key=pending.execution_key,
            arguments=pending.arguments,
        )

    def digest_of(
        self, *, tool_call_id: str, tool_name: str, execution_key: str, arguments: Mapping[str, Any]
    ) -> str:
        """The digest of any call of this run (pending or about to run)."""
        if tool_call_id in self._legacy_digest_calls:
            return legacy_arguments_digest(arguments)
        return call_digest(
            self._digest_key,
            agent_name=self.agent_name,
            agent_version=self.agent_version,
            tool_name=tool_name,
            execution_key=execution_key,
            arguments=arguments,
        )

    def append_user_message(self, text: str) -> None:
        """Add follow-up input to an idle run (the next Runner.arun answers it)."""
        if self._pending.calls or self.outstanding_calls():
            raise RunStateError("the run is waiting on tool calls; decide those first")
        self.history.append({"type": "user", "content": text})

    def amend_arguments(self, tool_call_id: str, arguments: Mapping[str, Any]) -> None:
        """Give a call waiting for approval new arguments (approve with changes): the
        pending call and the model's tool call in the history both change (each its own
        copy), any decision on it is dropped, and it gets a keyed digest from now on."""
        pending = self._pending.decidable(tool_call_id, action="amended")
        asked = self._asked_call(pending.tool_call_id)
        asked["arguments"] = orjson.loads(orjson.dumps(dict(arguments)))
        self._pending.put(replace(pending, arguments=orjson.loads(orjson.dumps(dict(arguments)))))
        self._legacy_digest_calls.discard(pending.tool_call_id)

    def _asked_call(self, tool_call_id: str) -> ToolCallItem:
        _, unanswered = unanswered_calls(self.history)
        for call in unanswered:
            if call["id"] == tool_call_id:
                return call
        raise UnknownCallError(
            f"run {self.run_id} has no unanswered tool call {tool_call_id!r} in its last turn"
        )

    # -- used by the Runner -------------------------------------------------------------

    def outstanding_calls(self) -> list[OutstandingCall]:
        """Calls of the last model turn that have no result yet, in order."""
        turn, unanswered = unanswered_calls(self.history)
        return [
            OutstandingCall(call=call, execution_key=execution_key(self.run_id, turn, call["id"]))
            for call in unanswered
        ]

    def set_pending(self, calls: Iterable[PendingCall]) -> None:
        """Replace the pending set (keeping decisions of calls that stay pending)."""
        self._pending.replace(calls)

    def mark_uncertain(self, call: PendingCall) -> None:
        """The call was dispatched without a recorded result: it waits for a human."""
        self._pending.put(replace(call, status="uncertain"))

    def add_result(self, *, tool_call_id: str, name: str, content: str, is_error: bool) -> None:
        """Record a call's result; it stops being pending."""
        item: ToolResultItem = {
            "type": "tool_result",
            "tool_call_id": tool_call_id,
            "name": name,
            "content": content,
            "is_error": is_error,
        }
        self.history.append(item)
        self._pending.answered(tool_call_id)
        # A later turn may reuse the provider's call id: it gets a keyed digest.
        self._legacy_digest_calls.discard(tool_call_id)

    # -- serialization ------------------------------------------------------------------

    def to_json(self) -> str:
        """JSON text of the current schema version (refuses a context with secrets)."""
        check_no_secrets(self.context)
        pending = self._pending
        payload = {
            SCHEMA_VERSION_KEY: CURRENT_SCHEMA_VERSION,
            "run_id": self.run_id,
            "agent_name": self.agent_name,
            "agent_version": self.agent_version,
            "current_turn": self.current_turn,
            "max_turns": self.max_turns,
            "history": self.history,
            "context": self.context,
            # orjson writes a PendingCall (a dataclass) natively, fields in declaration
            # order: no dict per call
            "pending_calls": list(pending.calls.values()),
            # most states have no decisions yet: no calls for empty objects
            "decisions": decisions_to_json(pending.decisions) if pending.decisions else {},
            "always": decisions_to_json(pending.always) if pending.always else {},
            "approval_metadata": (
                metadata_to_json(self.approval_metadata) if self.approval_metadata else {}
            ),
            "digest_key": self._digest_key.hex(),
            "legacy_digest_calls": sorted(self._legacy_digest_calls),
        }
        try:
            return orjson.dumps(payload).decode()
        except orjson.JSONEncodeError as error:
            raise RunStateError(
                f"the run state holds a value JSON cannot encode: {error}"
            ) from error

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the current schema version (an independent copy)."""
        loaded: dict[str, Any] = orjson.loads(self.to_json())
        return loaded

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        """Load JSON text of any supported schema version, or the legacy form."""
        try:
            payload = orjson.loads(text)
        except orjson.JSONDecodeError as error:
            raise RunStateError(f"a RunState must be JSON text: {error}") from error
        return cls._restore(read_payload(payload))

    @classmethod
    def from_payload(cls, payload: Any) -> RunState:
        """Load a freshly parsed JSON payload (adopted, not copied: pass nothing shared)."""
        return cls._restore(read_payload(payload))

    @property
    def schema_version(self) -> str:
        """The schema version `to_json` writes."""
        return CURRENT_SCHEMA_VERSION

    @property
    def engine(self) -> EngineInfo | None:
        """None: the run core's own state."""
        return None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunState:
        """Load a dict of any supported schema version, or the legacy form (copied)."""
        try:
            copied = orjson.loads(orjson.dumps(data))
        except orjson.JSONEncodeError as error:
            raise RunStateError(f"a RunState dict must be plain JSON data: {error}") from error
        return cls._restore(read_payload(copied))

    @classmethod
    def _restore(cls, fields: StateFields) -> RunState:
        """A state adopting freshly read fields (already checked one by one, so only
        their consistency is left to check)."""
        state = cls.__new__(cls)
        state.run_id = fields.run_id
        state.agent_name = fields.agent_name
        state.agent_version = fields.agent_version
        state.current_turn = fields.current_turn
        state.max_turns = fields.max_turns
        state.history = fields.history
        state.context = fields.context
        state._pending = PendingCalls(
            fields.run_id, calls=fields.pending, decisions=fields.decisions, always=fields.always
        )
        state.approval_metadata = fields.approval_metadata
        state._digest_key = fields.digest_key
        state._legacy_digest_calls = fields.legacy_digest_calls
        state._check_consistency()
        return state

    def _check_consistency(self) -> None:
        check_consistency(
            run_id=self.run_id,
            history=self.history,
            pending=self._pending.calls,
            decisions=self._pending.decisions,
            always=self._pending.always,
            legacy_digest_calls=self._legacy_digest_calls,
        )

    def __repr__(self) -> str:
        return (
            f"RunState(run_id={self.run_id!r}, agent={self.agent_name!r} "
            f"v{self.agent_version}, turn={self.current_turn}/{self.max_turns}, "
            f"items={len(self.history)}, pending={list(self._pending.calls)})"
        )
