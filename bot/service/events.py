"""The notifier the service talks through, and its events: one small frozen record per
step of a run.

The notifier is the only way the service talks to people (Slack, a terminal, ...). The
service calls `notify(event)` at each step of a run; the Slack layer renders the events
as messages in the run's thread and review cards, the terminal demo prints them. A
notifier never decides anything and is never the record of truth: the store is. So the
service treats a failing notifier as a lost message, not a failed run (it logs and goes
on), and every event carries the records it needs to render, never a RunState.

What a card may show is the redacted `ReviewSnapshot` and the records' fields; raw tool
arguments never reach a notifier.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from bot.review.snapshot import ReviewSnapshot
from bot.service.api import ApprovalView, UncertainCall
from store.records import (
    ApprovalRecord,
    ApprovalWindow,
    Escalation,
    RunRecord,
    StandingDecision,
)

Location = tuple[str, str]
"""(channel, ts) of a posted message: the run's root message or an approval's card."""


@dataclass(frozen=True, kw_only=True)
class CardReach:
    """How far an approval's card reached, told with every event that shows the card
    (the workflow fills it in where the tool's routing reaches past the thread): where
    its copies in people's direct messages are (each updated as the card is), how many
    people it was sent to, the escalation steps that fired, and whether the card in the
    thread carries the deciding buttons (not when the policy sends them by DM)."""

    copies: tuple[Location, ...] = ()
    sent_to: int = 0
    escalated: tuple[Escalation, ...] = ()
    decided_in_channel: bool = True


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
    reach: CardReach = field(default_factory=CardReach)
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
    reach: CardReach = field(default_factory=CardReach)
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
    reach: CardReach = field(default_factory=CardReach)
    window: ApprovalWindow | None = None  # the approval window it opened, or that approved it
    kind: Literal["approval_decided"] = "approval_decided"


@dataclass(frozen=True, kw_only=True)
class ApprovalReminder:
    """Sent once per approval, `remind_before` its expiry: remind the people who may
    still decide (`approvers`: the user and group ids of its escalation steps in force,
    the latest first, then the policy's; empty for "anyone but the requester") in the
    run's thread."""

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
    reach: CardReach = field(default_factory=CardReach)
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
    version is not registered, its engine cannot read its state, or the key its state or
    decision is sealed with is not in this process's ring (`reason` says which). It waits
    paused, its decisions kept; it resumes once a deployment that can read it runs (at
    the next start, or `approvals-bot runs resume`), or it can be cancelled."""

    run: RunRecord
    reason: str
    kind: Literal["run_needs_migration"] = "run_needs_migration"


@dataclass(frozen=True, kw_only=True)
class DirectCopy:
    """Send the card to one person by direct message; the answer is where it went (the
    workflow records it, and every later change of the card updates it too). `view` is
    the approval as it stands, for no particular viewer; `stands_in_for`: they get it as
    the stand-in of that person, away until `away_until`."""

    run: RunRecord
    view: ApprovalView
    recipient: str
    stands_in_for: str | None = None
    away_until: datetime | None = None
    standing: tuple[StandingDecision, ...] = ()
    reach: CardReach = field(default_factory=CardReach)
    kind: Literal["direct_copy"] = "direct_copy"

    @property
    def approval(self) -> ApprovalRecord:
        return self.view.approval


@dataclass(frozen=True, kw_only=True)
class ApprovalEscalated:
    """Nobody decided in time: from now on the people of `escalation` may decide too.
    Tell them in the run's thread (the card itself is updated by `ApprovalUpdated`)."""

    run: RunRecord
    approval: ApprovalRecord
    escalation: Escalation
    kind: Literal["approval_escalated"] = "approval_escalated"


@dataclass(frozen=True, kw_only=True)
class ApproversMentioned:
    """More people may decide than the policy sends direct messages to (`max_dms`): the
    ones left out (user and group ids) are mentioned in the run's thread instead."""

    run: RunRecord
    approval: ApprovalRecord
    approvers: tuple[str, ...]
    kind: Literal["approvers_mentioned"] = "approvers_mentioned"


@dataclass(frozen=True, kw_only=True)
class OutcomeToRequester:
    """The call was decided (approved, rejected, expired or revoked): tell its requester
    by direct message too, as the policy asks (`notify_requester = "dm"`)."""

    run: RunRecord
    approval: ApprovalRecord
    kind: Literal["outcome_to_requester"] = "outcome_to_requester"


@dataclass(frozen=True, kw_only=True)
class AuditedCallRan:
    """A call of an audit-only tool ran without waiting (bot.service.audited): post its
    card, after the fact, with its (redacted) result. The answer is where it went."""

    run: RunRecord
    approval: ApprovalRecord
    result: str
    is_error: bool
    kind: Literal["audited_call_ran"] = "audited_call_ran"


Posting = RunStarted | ApprovalRequested | DirectCopy | AuditedCallRan
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
    | DirectCopy
    | ApprovalEscalated
    | ApproversMentioned
    | OutcomeToRequester
    | AuditedCallRan
)
CardEvent = ApprovalRequested | ApprovalUpdated | ApprovalDecided | ExecutionRefused | DirectCopy
"""The events that show an approval's card (each told how far the card reached)."""


class Notifier(Protocol):
    async def notify(self, event: Event) -> Location | None:
        """Tell people about `event`. For a `Posting` return where the message went (or
        None when nothing was posted); for every other event return None."""
        ...
