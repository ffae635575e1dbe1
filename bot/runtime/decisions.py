"""Pending calls, their execution keys, the decisions humans take on them, and audit
metadata.

A decision is a tagged union (the `kind` field is its tag on the wire):

- `ApprovedCall` / `RejectedCall` answer a call waiting for approval;
- a `Resolution` (`VerifiedResult` / `RetryCall` / `AbortCall`) reconciles a call whose
  outcome is uncertain (dispatched, no recorded result); `resolution_of` reads the
  keyword form (`result=` | `retry=True` | `abort=True`) into one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from bot.errors import ResolutionError
from bot.runtime.model import ToolCall, ToolCallItem

PendingStatus = Literal["approval", "uncertain"]
DEFAULT_REJECTION_MESSAGE = "The tool call was rejected by a human reviewer."
ABORTED_MESSAGE = "The tool call was aborted by operator; its outcome is unknown."


def execution_key(run_id: str, turn_index: int, tool_call_id: str) -> str:
    """A call's stable identity: the run, the history position of the model turn that
    asked for it, and the provider's call id (providers may reuse ids across turns). The
    journal keys dispatches by it, and a tool may pass it downstream as an idempotency key."""
    material = f"{run_id}\x1f{turn_index}\x1f{tool_call_id}".encode()
    return hashlib.sha256(material).hexdigest()[:32]


@dataclass(frozen=True, kw_only=True)
class PendingCall:
    """A tool call that waits for a human: approval, or reconciliation when uncertain."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    execution_key: str
    status: PendingStatus

    @property
    def call(self) -> ToolCall:
        """The model's tool call as asked: `.id`, `.name`, `.arguments` (or `.input`)."""
        return ToolCall(id=self.tool_call_id, name=self.tool_name, arguments=self.arguments)


@dataclass(frozen=True, kw_only=True)
class DeferredToolRequests:
    """A paused run's pending calls by status, in the model's order, decided or not
    (`RunState.get_interruptions()` lists only the undecided ones)."""

    approvals: list[PendingCall]  # waiting for approval
    uncertain: list[PendingCall]  # dispatched without a recorded result: to reconcile


@dataclass(frozen=True, kw_only=True)
class OutstandingCall:
    """A call of the last model turn that has no result yet (used by the Runner)."""

    call: ToolCallItem
    execution_key: str


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ApprovalMetadata:
    """Audit only (never shown to the model): who decided, why, when (aware UTC; by
    default now). `ApprovalMetadata()` is an entry with neither approver nor reason."""

    approver_id: str | None = None
    reason: str | None = None
    timestamp: datetime = field(default_factory=_utc_now)

    @classmethod
    def now(cls, *, approver_id: str | None, reason: str | None) -> ApprovalMetadata:
        return cls(approver_id=approver_id, reason=reason, timestamp=datetime.now(UTC))


@dataclass(frozen=True, kw_only=True)
class ApprovedCall:
    kind: Literal["approved"] = "approved"


@dataclass(frozen=True, kw_only=True)
class RejectedCall:
    message: str  # what the model sees as the call's result
    kind: Literal["rejected"] = "rejected"


@dataclass(frozen=True, kw_only=True)
class VerifiedResult:
    result: str  # the outcome a human verified in the downstream system
    kind: Literal["verified_result"] = "verified_result"


@dataclass(frozen=True, kw_only=True)
class RetryCall:
    kind: Literal["retry"] = "retry"


@dataclass(frozen=True, kw_only=True)
class AbortCall:
    kind: Literal["abort"] = "abort"


@dataclass(frozen=True)
class ToolResult:
    """A call's result as a person verified it downstream: `ToolResult(call.id, text)`.
    `resolve(call, result=ToolResult(...))` takes it for the call with that id."""

    tool_call_id: str
    content: str


ApprovalDecision = ApprovedCall | RejectedCall
Resolution = VerifiedResult | RetryCall | AbortCall
Decision = ApprovalDecision | Resolution


def resolution_of(
    resolution: Resolution | None,
    *,
    result: str | ToolResult | None,
    retry: bool,
    abort: bool,
    tool_call_id: str,
) -> Resolution:
    """The one resolution given for call `tool_call_id`: the object form, or exactly one
    of `result=` (text, or a ToolResult of that call), `retry=True`, `abort=True`.
    ResolutionError naming what was given otherwise (a verified result that is not text
    is pending.py's InputError, as for the object form)."""
    for name, flag in (("retry", retry), ("abort", abort)):
        if not isinstance(flag, bool):
            raise ResolutionError(f"{name}= takes True or False, got {type(flag).__name__}")
    given = [
        name
        for name, present in (
            ("a resolution object", resolution is not None),
            ("result=", result is not None),
            ("retry=True", retry),
            ("abort=True", abort),
        )
        if present
    ]
    if len(given) != 1:
        raise ResolutionError(
            "resolve() takes a VerifiedResult, RetryCall or AbortCall, or else one of "
            "result=, retry=True or abort=True: exactly one; "
            f"got {' and '.join(given) if given else 'none'}"
        )
    if resolution is not None:
        return resolution
    if retry:
        return RetryCall()
    if abort:
        return AbortCall()
    if isinstance(result, ToolResult):
        if result.tool_call_id != tool_call_id:
            raise ResolutionError(
                f"the ToolResult is for call {result.tool_call_id!r}, not {tool_call_id!r}"
            )
        return VerifiedResult(result=result.content)
    return VerifiedResult(result=result or "")
