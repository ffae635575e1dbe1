"""The notifier: the only way the service talks to people (Slack, a terminal, ...).

The service calls these methods at each step of a run; the Slack layer implements them
with messages in the run's thread and review cards, the terminal demo prints them. A
notifier never decides anything and is never the record of truth: the store is. So the
service treats a failing notifier as a lost message, not a failed run (it logs and goes
on), and every method receives the records it needs to render, never a RunState.

What a card may show is the redacted `ReviewSnapshot` and the records' fields; raw tool
arguments never reach a notifier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from bot.review import ReviewSnapshot
from bot.runtime import PendingCall
from store.api import ApprovalRecord, RunRecord

if TYPE_CHECKING:
    from bot.service.views import ApprovalView

Location = tuple[str, str]
"""(channel, ts) of a posted message: the run's root message or an approval's card."""


class Notifier(Protocol):
    async def run_started(self, run: RunRecord, *, task: str) -> Location | None:
        """A run began. Return (channel, thread_ts) of the message that roots its thread,
        or None when there is no thread (the run then lives without one)."""
        ...

    async def approval_requested(
        self, run: RunRecord, approval: ApprovalRecord, snapshot: ReviewSnapshot
    ) -> Location | None:
        """A call waits for a decision: show its review card. Return where the card was
        posted so that `approval_decided` can update it in place, or None."""
        ...

    async def approval_decided(self, run: RunRecord, approval: ApprovalRecord) -> None:
        """An approval reached a terminal state (approved, rejected, expired, revoked):
        update its card (`approval.slack_channel`/`slack_ts`) in place."""
        ...

    async def approval_updated(self, run: RunRecord, view: ApprovalView) -> None:
        """A pending approval changed without closing: a vote was counted ("1 of 2
        approvals" and who) or an approver changed the arguments (new snapshot and
        digest in `view.approval`; earlier votes no longer count). Update the card in
        place. `view` is built for no particular viewer: its `can_*` flags are false."""
        ...

    async def approval_reminder(
        self, run: RunRecord, approval: ApprovalRecord, approvers: Sequence[str]
    ) -> None:
        """Sent once per approval, `remind_before` its expiry: remind the people who may
        still decide (`approvers`: the policy's user and group ids, or empty for "anyone
        but the requester") in the run's thread."""
        ...

    async def approval_expired_notice(self, run: RunRecord, approval: ApprovalRecord) -> None:
        """Tell the requester in the run's thread that nobody decided in time (the card
        itself is updated by `approval_decided`)."""
        ...

    async def execution_refused(
        self, run: RunRecord, approval: ApprovalRecord, *, reason: str
    ) -> None:
        """An approved call was not run: the last check right before it found the approval
        no longer valid (revoked or expired meanwhile, an approver no longer eligible, the
        arguments moved). The model was told "Not run: <reason>."; tell the people in the
        run's thread too. `approval` is the record as the check read it."""
        ...

    async def call_uncertain(self, run: RunRecord, call: PendingCall) -> None:
        """A call may or may not have taken effect (the process died while it ran and its
        replay policy is manual): a human must reconcile it before the run goes on."""
        ...

    async def run_finished(self, run: RunRecord, *, final_output: str | None, status: str) -> None:
        """The run ended (`status` "completed" or "max_turns") with this answer."""
        ...

    async def run_failed(self, run: RunRecord, *, error: str) -> None:
        """The run stopped on an error; `error` is one clear line fit for people."""
        ...
