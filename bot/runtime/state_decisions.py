"""The decisions people take on a paused run's calls: approve, reject (`decline`) and
resolve, as `RunState` offers them (it is a `HumanDecisions`).

`reason` and `approver_id` are audit only: they land in the state's
`approval_metadata` and never reach the model. A rejection's `message` is what the model
sees. The OpenAI Agents SDK's names are accepted too: `always_approve`, `always_reject`,
`rejection_message`; and `decline` is `reject`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.errors import InputError
from bot.runtime.decisions import (
    DEFAULT_REJECTION_MESSAGE,
    ApprovalMetadata,
    ApprovedCall,
    PendingCall,
    RejectedCall,
    Resolution,
    ToolResult,
    resolution_of,
)
from bot.runtime.pending import PendingCalls


class HumanDecisions:
    """What a person decides on a run's pending calls, over the run's `PendingCalls`
    (`_pending`) and its audit notes (`approval_metadata`)."""

    _pending: PendingCalls
    approval_metadata: dict[str, ApprovalMetadata]

    def approve(
        self,
        call: PendingCall | str,
        *,
        always: bool = False,
        always_approve: bool | None = None,
        approver_id: str | None = None,
        reason: str | None = None,
        decided_at: datetime | None = None,
    ) -> None:
        """Approve a call waiting for approval; `always` (or the SDK's `always_approve`)
        approves its tool for the rest of the run. `approver_id` and `reason` are audit
        only; `decided_at` is when the person decided (default now), recorded with them."""
        always = _same_option("always", always, "always_approve", always_approve, False)
        check_aware(decided_at)
        pending = self._pending.decide(call, ApprovedCall(), always=always)
        self._note(pending, approver_id=approver_id, reason=reason, at=decided_at)

    def reject(
        self,
        call: PendingCall | str,
        *,
        message: str | None = None,
        rejection_message: str | None = None,
        always: bool = False,
        always_reject: bool | None = None,
        approver_id: str | None = None,
        reason: str | None = None,
        decided_at: datetime | None = None,
    ) -> None:
        """Reject a call: the model sees `message` (or the SDK's `rejection_message`; a
        neutral default without either) as its result, never `reason` or `approver_id`
        (nor `decided_at`, as for `approve`). `always`/`always_reject` as for `approve`."""
        message = _same_option("message", message, "rejection_message", rejection_message, None)
        always = _same_option("always", always, "always_reject", always_reject, False)
        if message is not None and not isinstance(message, str):
            raise InputError("a rejection message must be a string")
        check_aware(decided_at)
        decision = RejectedCall(message=message or DEFAULT_REJECTION_MESSAGE)
        pending = self._pending.decide(call, decision, always=always)
        self._note(pending, approver_id=approver_id, reason=reason, at=decided_at)

    decline = reject

    def resolve(
        self,
        call_or_key: PendingCall | str,
        resolution: Resolution | None = None,
        *,
        result: str | ToolResult | None = None,
        retry: bool = False,
        abort: bool = False,
        approver_id: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Reconcile an uncertain call with exactly one of: a `VerifiedResult` or
        `result=` (the outcome a person verified downstream, used as the call's result),
        a `RetryCall` or `retry=True` (accept possible repetition), an `AbortCall` or
        `abort=True` (the model is told the call was aborted). ResolutionError for none
        or several, or for a call waiting for approval; UnknownExecutionKey for a call
        the run does not have. `approver_id` and `reason` are audit only."""
        pending = self._pending.find(call_or_key)
        chosen = resolution_of(
            resolution, result=result, retry=retry, abort=abort, tool_call_id=pending.tool_call_id
        )
        pending = self._pending.resolve(call_or_key, chosen)
        self._note(pending, approver_id=approver_id, reason=reason)

    def _note(
        self,
        pending: PendingCall,
        *,
        approver_id: str | None,
        reason: str | None,
        at: datetime | None = None,
    ) -> None:
        note = audit_note(approver_id=approver_id, reason=reason, at=at)
        if note is not None:
            self.approval_metadata[pending.tool_call_id] = note


def audit_note(
    *, approver_id: str | None, reason: str | None, at: datetime | None
) -> ApprovalMetadata | None:
    """Who decided a call and why, and when (`at`, default now; timezone-aware, else
    InputError): audit only, never shown to the model. None when neither is given."""
    check_aware(at)
    if approver_id is None and reason is None:
        return None
    return ApprovalMetadata(
        approver_id=approver_id, reason=reason, timestamp=(at or datetime.now(UTC)).astimezone(UTC)
    )


def _same_option(name: str, ours: Any, alias: str, theirs: Any, default: Any) -> Any:
    """The value of an option given by our name or its SDK alias (InputError if the two
    are given different values)."""
    if theirs is None:
        return ours
    if ours != default and ours != theirs:
        raise InputError(f"give {name}= or {alias}=, not both with different values")
    return theirs


def check_aware(moment: datetime | None) -> None:
    if moment is not None and moment.utcoffset() is None:
        raise InputError("a decision time must be timezone-aware")
