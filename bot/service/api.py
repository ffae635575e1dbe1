"""What the service shows the layer above: its answers, its read models, its notifier.

As `store.api` and `store.records` do for the store, this module holds the records and
tagged unions the service's operations answer with (`DecisionResult`,
`FollowUpOutcome`), the read models people are shown (`ApprovalView`, `Page`,
`UncertainCall`), and the notifier the service talks through, with one event record per
step of a run.

The notifier is the only way the service talks to people (Slack, a terminal, ...). The
service calls `notify(event)` at each step of a run, with one small frozen record per
kind of event; the Slack layer renders them as messages in the run's thread and review
cards, the terminal demo prints them. A notifier never decides anything and is never the
record of truth: the store is. So the service treats a failing notifier as a lost
message, not a failed run (it logs and goes on), and every event carries the records it
needs to render, never a RunState.

What a card may show is the redacted `ReviewSnapshot` and the records' fields; raw tool
arguments never reach a notifier.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Literal, Protocol, TypeVar

from bot.errors import InputError
from bot.review.snapshot import ReviewSnapshot
from bot.runtime import PendingCall
from store.records import ApprovalRecord, PendingCursor, RunRecord, StandingDecision, VoteRecord

T = TypeVar("T")

Surface = Literal["slack", "terminal", "cli"]
"""Whom a service serves: the Slack bot, the terminal demo, or operators at the CLI.
Runs remember where they were started (`RunRecord.origin`): the bot and the demo each
show and decide only their own runs; operators reach every run. Every decision records
the surface it came through (audit detail `via`)."""

# -- what the operations answer ------------------------------------------------------


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

# -- read models ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ApprovalView:
    """One approval for one viewer.

    `votes` are the votes on the current arguments digest (older ones no longer count);
    `approvals_count` of `required` distinct approvals are in (the card's "1 of 2
    approvals"), given by `voters`. `approvers` are the policy's ids for the tool (users
    U…/W…, groups S…; empty: anyone but the requester unless self approval is allowed).
    `can_decide`/`can_revoke`/`can_reconcile` say what the viewer may do now (the rules
    of bot.service.authority); `why_not` says why the viewer may not decide (None when
    they may). `must_read`: the card cuts the arguments, so an approval counts only
    from someone who read them whole (bot.service.reading); `has_read`: the viewer has,
    for the current digest."""

    approval: ApprovalRecord
    votes: tuple[VoteRecord, ...]
    approvals_count: int
    required: int
    voters: tuple[str, ...]
    approvers: tuple[str, ...]
    can_decide: bool
    can_revoke: bool
    can_reconcile: bool
    why_not: str | None
    must_read: bool = False
    has_read: bool = False
    can_stand: bool = False  # the viewer may decide it for the rest of the run (policy)
    standing: StandingDecision | None = None  # the active standing decision it made


@dataclass(frozen=True, kw_only=True)
class Page(Generic[T]):
    """One page of a list; pass `next_cursor` back for the next (None: the last page)."""

    items: tuple[T, ...]
    next_cursor: str | None


@dataclass(frozen=True, kw_only=True)
class UncertainCall:
    """A call whose outcome is unknown, as people see it before they reconcile it (its
    arguments stay in the sealed state)."""

    run_id: str
    tool_call_id: str
    tool_name: str
    execution_key: str

    @classmethod
    def of(cls, run_id: str, call: PendingCall) -> UncertainCall:
        return cls(
            run_id=run_id,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            execution_key=call.execution_key,
        )


def encode_cursor(cursor: PendingCursor) -> str:
    created_at, approval_id = cursor
    raw = f"{created_at.isoformat()}|{approval_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> PendingCursor:
    """An opaque cursor from `Page.next_cursor`; InputError for anything else."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        created_at, approval_id = raw.split("|", 1)
        moment = datetime.fromisoformat(created_at)
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"{text!r} is not a page cursor from this bot") from None
    if moment.tzinfo is None or not approval_id:
        raise InputError(f"{text!r} is not a page cursor from this bot")
    return moment, approval_id


# -- the notifier and its events -----------------------------------------------------

Location = tuple[str, str]
"""(channel, ts) of a posted message: the run's root message or an approval's card."""


@dataclass(frozen=True, kw_only=True)
class RunStarted:
    """A run began. The answer is (channel, thread_ts) of the message that roots its
    thread, or None when there is no thread (the run then lives without one)."""

    run: RunRecord
    task: str
    kind: Literal["run_started"] = "run_started"


@dataclass(frozen=True, kw_only=True)
class ApprovalRequested:
    """A call waits for a decision: show its review card. The answer is where the card
    was posted, so that `ApprovalDecided` can update it in place, or None."""

    run: RunRecord
    approval: ApprovalRecord
    snapshot: ReviewSnapshot
    standing: tuple[StandingDecision, ...] = ()  # the run's active standing decisions
    kind: Literal["approval_requested"] = "approval_requested"


@dataclass(frozen=True, kw_only=True)
class ApprovalUpdated:
    """A pending approval changed without closing: a vote was counted ("1 of 2
    approvals" and who) or an approver changed the arguments (new snapshot and digest in
    `view.approval`; earlier votes no longer count). Update the card in place. `view` is
    built for no particular viewer: its `can_*` flags are false."""

    run: RunRecord
    view: ApprovalView
    standing: tuple[StandingDecision, ...] = ()  # the run's active standing decisions
    kind: Literal["approval_updated"] = "approval_updated"

    @property
    def approval(self) -> ApprovalRecord:
        return self.view.approval


@dataclass(frozen=True, kw_only=True)
class ApprovalDecided:
    """An approval reached a terminal state (approved, rejected, expired, revoked):
    update its card (`approval.slack_channel`/`slack_ts`) in place."""

    run: RunRecord
    approval: ApprovalRecord
    standing: tuple[StandingDecision, ...] = ()  # the run's active standing decisions
    kind: Literal["approval_decided"] = "approval_decided"


@dataclass(frozen=True, kw_only=True)
class ApprovalReminder:
    """Sent once per approval, `remind_before` its expiry: remind the people who may
    still decide (`approvers`: the policy's user and group ids, or empty for "anyone but
    the requester") in the run's thread."""

    run: RunRecord
    approval: ApprovalRecord
    approvers: tuple[str, ...]
    kind: Literal["approval_reminder"] = "approval_reminder"


@dataclass(frozen=True, kw_only=True)
class ApprovalExpired:
    """Tell the requester in the run's thread that nobody decided in time (the card
    itself is updated by `ApprovalDecided`)."""

    run: RunRecord
    approval: ApprovalRecord
    kind: Literal["approval_expired"] = "approval_expired"


@dataclass(frozen=True, kw_only=True)
class ExecutionRefused:
    """An approved call was not run: the last check right before it found the approval
    no longer valid (revoked or expired meanwhile, an approver no longer eligible, the
    arguments moved). The model was told "Not run: <reason>."; tell the people in the
    run's thread too. `approval` is the record as the check read it."""

    run: RunRecord
    approval: ApprovalRecord
    reason: str
    kind: Literal["execution_refused"] = "execution_refused"


@dataclass(frozen=True, kw_only=True)
class CallUncertain:
    """A call may or may not have taken effect (the process died while it ran and its
    replay policy is manual): a human must reconcile it before the run goes on."""

    run: RunRecord
    call: UncertainCall
    kind: Literal["call_uncertain"] = "call_uncertain"


@dataclass(frozen=True, kw_only=True)
class RunFinished:
    """The run ended (`status` "completed" or "max_turns") with this answer."""

    run: RunRecord
    final_output: str | None
    status: str
    kind: Literal["run_finished"] = "run_finished"


@dataclass(frozen=True, kw_only=True)
class RunFailed:
    """The run stopped on an error; `error` is one clear line fit for people."""

    run: RunRecord
    error: str
    kind: Literal["run_failed"] = "run_failed"


@dataclass(frozen=True, kw_only=True)
class RunCancelled:
    """An operator or the requester cancelled the run: say so in its thread (its open
    cards were closed with `ApprovalDecided`, status `revoked`)."""

    run: RunRecord
    actor: str
    reason: str
    kind: Literal["run_cancelled"] = "run_cancelled"


@dataclass(frozen=True, kw_only=True)
class RunPaused:
    """An operator or the requester paused the run: it takes no new step (a tool already
    running finishes) until `runs resume` releases it."""

    run: RunRecord
    actor: str
    reason: str
    kind: Literal["run_paused"] = "run_paused"


@dataclass(frozen=True, kw_only=True)
class RunUnpaused:
    """The run's pause was released: it goes on (or waits for its decisions)."""

    run: RunRecord
    actor: str
    kind: Literal["run_unpaused"] = "run_unpaused"


@dataclass(frozen=True, kw_only=True)
class ResumeStalled:
    """Resuming the run failed `attempts` times in a row on the database; the bot gave
    up for now and keeps trying in the background (the run is neither failed nor lost).
    Said once per stretch of failures; the run's answer follows when a try goes through."""

    run: RunRecord
    attempts: int
    kind: Literal["resume_stalled"] = "resume_stalled"


@dataclass(frozen=True, kw_only=True)
class RunNeedsMigration:
    """The run's decisions are taken but this deployment cannot resume it: its agent
    version is not registered, or its engine cannot read its state (`reason` says which).
    It waits paused, its decisions kept; it resumes once the version is deployed again
    (at the next start, or `approvals-bot runs resume`), or it can be cancelled."""

    run: RunRecord
    reason: str
    kind: Literal["run_needs_migration"] = "run_needs_migration"


Posting = RunStarted | ApprovalRequested
"""The events whose answer is where the message went (a `Location`, or None)."""

Event = (
    RunStarted
    | ApprovalRequested
    | ApprovalUpdated
    | ApprovalDecided
    | ApprovalReminder
    | ApprovalExpired
    | ExecutionRefused
    | CallUncertain
    | RunFinished
    | RunFailed
    | RunCancelled
    | RunPaused
    | RunUnpaused
    | ResumeStalled
    | RunNeedsMigration
)


class Notifier(Protocol):
    async def notify(self, event: Event) -> Location | None:
        """Tell people about `event`. For a `Posting` return where the message went (or
        None when nothing was posted); for every other event return None."""
        ...
