"""Pending calls, their execution keys, the decisions humans take on them, and audit
metadata.

A decision is a tagged union (the `kind` field is its tag on the wire):

- `ApprovedCall` / `RejectedCall` answer a call waiting for approval;
- a `Resolution` (`VerifiedResult` / `RetryCall` / `AbortCall`) reconciles a call whose
  outcome is uncertain (dispatched, no recorded result).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from bot.runtime.model import ToolCallItem

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
