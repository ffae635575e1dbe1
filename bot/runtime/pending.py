"""The calls a paused run waits on, and the decisions people took on them.

A call waits for approval (`approve`/`reject` decide it) or, when it was dispatched
without a recorded result, for reconciliation (a `Resolution`). Each call is decided at
most once; an `always` decision stands for every later call of its tool in the run.
RunState (bot.runtime.state) owns one `PendingCalls` and adds the audit metadata, the
history and the wire format around it.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.errors import AlreadyDecidedError, InputError, ResolutionError, UnknownExecutionKey
from bot.runtime.decisions import (
    AbortCall,
    ApprovalDecision,
    Decision,
    PendingCall,
    Resolution,
    RetryCall,
    VerifiedResult,
)


class PendingCalls:
    """The pending calls of one run in the model's order, keyed by tool call id, with
    each one's decision and the tools decided for the rest of the run (`always`)."""

    __slots__ = ("always", "calls", "decisions", "run_id")

    def __init__(
        self,
        run_id: str,
        *,
        calls: dict[str, PendingCall],
        decisions: dict[str, Decision],
        always: dict[str, Decision],
    ) -> None:
        """Adopt the three maps as they are (RunState copies or reads them first)."""
        self.run_id = run_id
        self.calls = calls
        self.decisions = decisions
        self.always = always

    def decision_for(self, call: PendingCall | str) -> Decision | None:
        """The decision that applies to a pending call: its own, or for an approval an
        `always` rule of its tool; None while undecided."""
        pending = self.find(call)
        own = self.decisions.get(pending.tool_call_id)
        if own is not None or pending.status == "uncertain":
            return own
        return self.always.get(pending.tool_name)

    def undecided(self) -> list[PendingCall]:
        return [call for call in self.calls.values() if self.decision_for(call) is None]

    def find(self, call: PendingCall | str) -> PendingCall:
        """The run's pending call for a call, a tool call id or an execution key;
        UnknownExecutionKey (an UnknownCallError) when there is none, ResolutionError
        when the given call is not the run's own (it changed since it was read)."""
        key = call.tool_call_id if isinstance(call, PendingCall) else call
        found = self.calls.get(key) if isinstance(key, str) else None
        if found is None and isinstance(key, str):
            found = next((c for c in self.calls.values() if c.execution_key == key), None)
        if found is None:
            known = ", ".join(self.calls) or "none"
            raise UnknownExecutionKey(
                f"no pending call with tool call id or execution key {key!r} "
                f"in run {self.run_id} (pending: {known})"
            )
        if isinstance(call, PendingCall) and call != found:
            raise ResolutionError(
                f"the call given for {found.tool_call_id} differs from the run's pending "
                "call (arguments, key or status changed); decide on the state's own call"
            )
        return found

    def decide(
        self, call: PendingCall | str, decision: ApprovalDecision, *, always: bool = False
    ) -> PendingCall:
        """Approve or reject a call waiting for approval (`always`: every later call of
        its tool in the run too); the call decided."""
        pending = self.decidable(call, action=decision.kind)
        self.decisions[pending.tool_call_id] = decision
        if always:
            self.always[pending.tool_name] = decision
        return pending

    def resolve(self, call: PendingCall | str, resolution: Resolution) -> PendingCall:
        """Reconcile a call whose outcome is uncertain; the call resolved."""
        if not isinstance(resolution, VerifiedResult | RetryCall | AbortCall):
            raise ResolutionError(
                "resolve() takes a VerifiedResult, RetryCall or AbortCall, "
                f"got {type(resolution).__name__}"
            )
        if isinstance(resolution, VerifiedResult) and not isinstance(resolution.result, str):
            raise InputError("a verified result must be a string")
        pending = self.find(call)
        if pending.status != "uncertain":
            raise ResolutionError(
                f"call {pending.tool_call_id} ({pending.tool_name}) waits for approval, "
                "not reconciliation: approve or reject it"
            )
        self._refuse_second_decision(pending)
        self.decisions[pending.tool_call_id] = resolution
        return pending

    def decidable(self, call: PendingCall | str, *, action: str) -> PendingCall:
        """The pending call, if it waits for approval and has no decision yet (`action`,
        such as "approved", names what was refused)."""
        pending = self.find(call)
        if pending.status != "approval":
            raise ResolutionError(
                f"call {pending.tool_call_id} ({pending.tool_name}) has an uncertain "
                f"outcome, so it cannot be {action}: resolve it with a VerifiedResult, "
                "RetryCall or AbortCall"
            )
        self._refuse_second_decision(pending)
        return pending

    def _refuse_second_decision(self, pending: PendingCall) -> None:
        earlier = self.decisions.get(pending.tool_call_id)
        if earlier is not None:
            raise AlreadyDecidedError(
                f"call {pending.tool_call_id} ({pending.tool_name}) is already decided: "
                f"{earlier.kind}",
                status=earlier.kind,
            )

    def replace(self, calls: Iterable[PendingCall]) -> None:
        """A new pending set, keeping the decisions of calls that stay pending."""
        self.calls = {call.tool_call_id: call for call in calls}
        self.decisions = {k: v for k, v in self.decisions.items() if k in self.calls}

    def put(self, call: PendingCall) -> None:
        """A pending call changed (new arguments, or its outcome became uncertain): any
        decision on it no longer applies."""
        self.calls[call.tool_call_id] = call
        self.decisions.pop(call.tool_call_id, None)

    def answered(self, tool_call_id: str) -> None:
        """The call has its result: it waits no more."""
        self.calls.pop(tool_call_id, None)
        self.decisions.pop(tool_call_id, None)
