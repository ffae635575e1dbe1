"""What the service's operations answer: a counted vote (`DecisionResult`), a committed
decision whose follow-ups are still to run (`Recorded`), and the outcomes of a thread
reply (`FollowUpOutcome`, a tagged union)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from store.records import ApprovalRecord, RunRecord

T = TypeVar("T")


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


@dataclass(frozen=True, kw_only=True)
class Recorded(Generic[T]):
    """A decision the store has committed (a vote, an edit, a revocation): durable, so a
    person may be told it is taken. `approval` is the record as the commit left it.
    `finish()` does what follows (update the card, resume the run, or raise the refusal
    the store's answer means, as `decide` would) and answers what `decide` would; call
    it once, after telling the person."""

    approval: ApprovalRecord
    finish: Callable[[], Awaitable[T]] = field(repr=False, compare=False)


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
class Retrying:
    """The run's resume keeps failing on the database and is being retried (in the
    background until it goes through); the input was not taken."""

    run: RunRecord
    kind: Literal["retrying"] = "retrying"


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


FollowUpOutcome = NotARunThread | WaitingForApproval | Busy | Retrying | Closed | Continued
