"""What the service's operations answer: small frozen records and tagged unions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from store.api import ApprovalRecord, RunRecord


@dataclass(frozen=True, kw_only=True)
class DecisionResult:
    """A vote that was counted. `approval` is the record after it: still `pending` while
    the quorum is not met (`approvals_count` of `required`, from `voters`), else
    `approved` or `rejected`. `resume_started` is true when this vote closed the run's
    last open approval and this caller claimed the resume (it runs in a service task)."""

    approval: ApprovalRecord
    resume_started: bool
    approvals_count: int = 1
    required: int = 1
    voters: tuple[str, ...] = ()

    @property
    def quorum_met(self) -> bool:
        return self.approval.status == "approved"


@dataclass(frozen=True, kw_only=True)
class NotARunThread:
    """The thread belongs to no run: the message is not for the bot."""

    kind: Literal["not_a_run_thread"] = "not_a_run_thread"


@dataclass(frozen=True, kw_only=True)
class WaitingForApproval:
    """The run waits for decisions (or a reconciliation); the input was not taken."""

    run: RunRecord
    pending: int
    kind: Literal["waiting_for_approval"] = "waiting_for_approval"


@dataclass(frozen=True, kw_only=True)
class Busy:
    """The run is working right now; the input was not taken. Try again when it is idle."""

    run: RunRecord
    kind: Literal["busy"] = "busy"


@dataclass(frozen=True, kw_only=True)
class Continued:
    """The input reached the agent; the run's outcome went to the notifier."""

    run: RunRecord
    kind: Literal["continued"] = "continued"


@dataclass(frozen=True, kw_only=True)
class Closed:
    """The run was cancelled; it takes no more input."""

    run: RunRecord
    kind: Literal["closed"] = "closed"


FollowUpOutcome = NotARunThread | WaitingForApproval | Busy | Closed | Continued
