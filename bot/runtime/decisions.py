"""Pending calls, the decisions humans take on them, and their audit metadata.

A decision is a tagged union (the `kind` field is its tag on the wire):

- `ApprovedCall` / `RejectedCall` answer a call waiting for approval;
- `VerifiedResult` / `RetryCall` / `AbortCall` resolve a call whose outcome is uncertain
  (dispatched, no recorded result).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from bot.runtime.model import ToolCallItem

PendingStatus = Literal["approval", "uncertain"]
DEFAULT_REJECTION_MESSAGE = "The tool call was rejected by a human reviewer."
ABORTED_MESSAGE = "The tool call was aborted by operator; its outcome is unknown."


@dataclass(frozen=True, kw_only=True)
class PendingCall:
    """A tool call that waits for a human: approval, or reconciliation when uncertain."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    execution_key: str
    status: PendingStatus


@dataclass(frozen=True, kw_only=True)
class DeferredToolRequests:
    """Pending calls by status, decided or not (`get_interruptions()` lists the
    undecided ones)."""

    approvals: list[PendingCall]
    uncertain: list[PendingCall]


@dataclass(frozen=True, kw_only=True)
class OutstandingCall:
    """A call of the last model turn that has no result yet (used by the Runner)."""

    call: ToolCallItem
    execution_key: str


@dataclass(frozen=True, kw_only=True)
class ApprovalMetadata:
    """Audit only (never shown to the model): who decided, why, when (aware UTC)."""

    approver_id: str | None
    reason: str | None
    timestamp: datetime

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


ApprovalDecision = ApprovedCall | RejectedCall
Resolution = VerifiedResult | RetryCall | AbortCall
Decision = ApprovalDecision | Resolution


def decision_to_dict(decision: Decision) -> dict[str, Any]:
    match decision:
        case RejectedCall(message=message):
            return {"kind": "rejected", "message": message}
        case VerifiedResult(result=result):
            return {"kind": "verified_result", "result": result}
        case _:
            return {"kind": decision.kind}


def metadata_to_dict(metadata: ApprovalMetadata) -> dict[str, Any]:
    return {
        "approver_id": metadata.approver_id,
        "reason": metadata.reason,
        "timestamp": metadata.timestamp.isoformat(),
    }


def pending_to_dict(call: PendingCall) -> dict[str, Any]:
    return {
        "tool_call_id": call.tool_call_id,
        "tool_name": call.tool_name,
        "arguments": call.arguments,
        "execution_key": call.execution_key,
        "status": call.status,
    }
