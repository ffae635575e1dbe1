"""SlackNotifier: the service's notifier, rendered in Slack.

A run's root message roots its thread; review cards, reminders, escalations, notices,
the answer and a cancellation go into that thread; a decided or changed approval
updates its card in place, with the run's standing decisions (bot.service.standing)
named on it, and every copy of the card in people's direct messages with it (the
event's `reach`). A copy, and a requester's outcome, go by direct message
(bot.slack.direct: rate limits waited out). A run without a channel (started from code)
is told nothing in a thread; that is logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from bot.errors import SlackError
from bot.service.api import UncertainCall
from bot.service.events import (
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminder,
    ApprovalRequested,
    ApprovalUpdated,
    ApproversMentioned,
    AuditedCallRan,
    CallUncertain,
    CardReach,
    DirectCopy,
    Event,
    ExecutionRefused,
    Location,
    OutcomeToRequester,
    ResumeStalled,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunNeedsMigration,
    RunPaused,
    RunStarted,
    RunUnpaused,
)
from bot.slack import cards
from bot.slack.blocks import Block, mrkdwn_context, mrkdwn_section
from bot.slack.direct import DirectMessages
from bot.slack.gateway import SlackGateway
from bot.slack.messages import run_thread
from bot.slack.messages.approval_lines import approval_card_text, audited_card_text, copy_note
from bot.slack.patience import PATIENCE_SECONDS, Sleep, patiently
from store.records import ApprovalRecord, ApprovalWindow, RunRecord, StandingDecision

log = logging.getLogger(__name__)


UPDATE_PATIENCE_SECONDS = 20.0
"""How long a card's update waits Slack out (see SlackNotifier)."""
T = TypeVar("T")


class SlackNotifier:
    """Implements bot.service.Notifier with chat.postMessage / chat.update.

    What it posts in a run's thread (the root, review cards, notices, the answer) waits
    Slack out for up to `patience` seconds (bot.slack.patience: 429s and 5xx tried again),
    so an outage delays a card and loses none; nothing runs before its card is decided,
    so the wait holds nothing up. A card's update waits only `update_patience`, so the
    task deciding is not held for minutes: past that the card shows its old state until
    its next update (a click on it is answered with what happened)."""

    def __init__(
        self,
        gateway: SlackGateway,
        *,
        direct: DirectMessages | None = None,
        patience: float = PATIENCE_SECONDS,
        update_patience: float = UPDATE_PATIENCE_SECONDS,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._slack = gateway
        self._direct = direct or DirectMessages(gateway)
        self._patience = patience
        self._update_patience = update_patience
        self._sleep = sleep

    async def _patiently(
        self, call: Callable[[], Awaitable[T]], *, what: str, update: bool = False
    ) -> T:
        patience = self._update_patience if update else self._patience
        return await patiently(call, what=what, patience=patience, sleep=self._sleep)

    async def notify(self, event: Event) -> Location | None:
        match event:
            case RunStarted(run=run, task=task):
                return await self._run_started(run, task)
            case ApprovalRequested():
                return await self._post_card(event)
            case DirectCopy():
                return await self._post_copy(event)
            case ApprovalDecided() | ApprovalUpdated() | ExecutionRefused():
                await self._changed(event)
            case CallUncertain(run=run, call=call):
                await self._post_uncertain_card(run, call)
            case OutcomeToRequester(run=run, approval=approval):
                await self._tell_requester(run, approval)
            case AuditedCallRan():
                return await self._post_audited(event)
            case _:
                await self._post_in_thread(event.run, thread_text(event))
        return None

    async def _changed(self, event: ApprovalDecided | ApprovalUpdated | ExecutionRefused) -> None:
        """A card to show again, everywhere it is (an execution refused is told in the
        thread too)."""
        run, approval, reach = event.run, event.approval, event.reach
        if isinstance(event, ExecutionRefused):
            await self._post_in_thread(
                run, run_thread.execution_refused_text(approval, event.reason)
            )
            if approval.status == "approved":  # other states already closed the card
                await self._update_card(
                    Card(run=run, approval=approval, voters=None, not_run=event.reason, reach=reach)
                )
            return
        voters = event.view.voters if isinstance(event, ApprovalUpdated) else None
        window = event.window if isinstance(event, ApprovalDecided) else None
        card = Card(run=run, approval=approval, voters=voters, standing=event.standing,
                    reach=reach, window=window)  # fmt: skip
        await self._update_card(card)

    async def _tell_requester(self, run: RunRecord, approval: ApprovalRecord) -> None:
        if approval.requester is not None:
            text = run_thread.outcome_text(run, approval)
            await self._direct.post(
                user=approval.requester, text=text, blocks=[mrkdwn_section(text)]
            )

    async def _run_started(self, run: RunRecord, task: str) -> Location | None:
        if run.channel is None:
            return None
        text = run_thread.run_root_text(
            agent_name=run.agent_name, requester=run.requester, task=task
        )
        root: list[Block] = [
            mrkdwn_section(text),
            mrkdwn_context(run_thread.run_root_context(run.run_id)),
        ]
        channel = run.channel
        ts = await self._patiently(
            lambda: self._slack.post(channel=channel, text=text, blocks=root),
            what=f"the root of run {run.run_id}",
        )
        return (channel, ts)

    async def _post_card(self, event: ApprovalRequested) -> Location | None:
        run, approval = event.run, event.approval
        if run.channel is None:
            return None
        card = Card(run=run, approval=approval, voters=(), standing=event.standing,
                    reach=event.reach)  # fmt: skip
        channel = run.channel
        ts = await self._patiently(
            lambda: self._slack.post(
                channel=channel,
                thread_ts=run.thread_ts,
                text=approval_card_text(approval),
                blocks=card.blocks(),
            ),
            what=f"the card of {approval.approval_id}",
        )
        return (channel, ts)

    async def _post_copy(self, event: DirectCopy) -> Location:
        """The card in the recipient's direct messages, with every button: the click is
        checked as any other (the call's channel, the policy)."""
        note = copy_note(
            channel=event.run.channel,
            stands_in_for=event.stands_in_for,
            away_until=event.away_until,
        )
        card = Card(run=event.run, approval=event.approval, voters=event.view.voters,
                    standing=event.standing, reach=event.reach, note=note)  # fmt: skip
        text = approval_card_text(event.approval)
        return await self._direct.post(user=event.recipient, text=text, blocks=card.copy_blocks())

    async def _post_audited(self, event: AuditedCallRan) -> Location | None:
        """An audit-only call's card, after it ran, with its result (no buttons)."""
        run = event.run
        if run.channel is None:
            return None
        blocks = cards.audited_card_blocks(
            run=run, approval=event.approval, result=event.result, is_error=event.is_error
        )
        channel = run.channel
        ts = await self._patiently(
            lambda: self._slack.post(
                channel=channel, thread_ts=run.thread_ts,
                text=audited_card_text(event.approval), blocks=blocks,
            ),
            what=f"the audit card of approval {event.approval.approval_id}",
        )  # fmt: skip
        return (channel, ts)

    async def _post_uncertain_card(self, run: RunRecord, call: UncertainCall) -> None:
        if run.channel is None:
            log.info("run %s has no channel; call %s is uncertain", run.run_id, call.tool_call_id)
            return
        channel = run.channel
        await self._patiently(
            lambda: self._slack.post(
                channel=channel,
                thread_ts=run.thread_ts,
                text=run_thread.uncertain_call_text(call),
                blocks=cards.uncertain_card_blocks(run=run, call=call),
            ),
            what=f"the uncertain call of run {run.run_id}",
        )

    async def _update_card(self, card: Card) -> None:
        """The thread's card, then each copy in people's direct messages (one copy that
        cannot be updated, say deleted by its reader, does not keep the others stale)."""
        approval = card.approval
        text = approval_card_text(approval)
        if approval.slack_channel is not None and approval.slack_ts is not None:
            channel, ts = approval.slack_channel, approval.slack_ts
            await self._patiently(
                lambda: self._slack.update(channel=channel, ts=ts, text=text, blocks=card.blocks()),
                what=f"the card of {approval.approval_id}",
                update=True,
            )
        for channel, ts in card.reach.copies:
            try:
                await self._slack.update(channel=channel, ts=ts, text=text,
                                         blocks=card.copy_blocks())  # fmt: skip
            except SlackError as error:
                log.warning("the copy of %s in %s was not updated: %s", approval.approval_id,
                            channel, error)  # fmt: skip

    async def _post_in_thread(self, run: RunRecord, text: str) -> None:
        if run.channel is None:
            log.info("run %s has no channel; a thread message was not posted", run.run_id)
            return
        channel = run.channel
        await self._patiently(
            lambda: self._slack.post(channel=channel, thread_ts=run.thread_ts, text=text),
            what=f"a message in the thread of run {run.run_id}",
        )


@dataclass(frozen=True, kw_only=True)
class Card:
    """What one rendering of an approval's card needs; the thread's card and its copies
    in direct messages differ only in the copy's note and in the deciding buttons."""

    run: RunRecord
    approval: ApprovalRecord
    voters: Sequence[str] | None
    not_run: str | None = None
    standing: Sequence[StandingDecision] = ()
    reach: CardReach = field(default_factory=CardReach)
    note: str | None = None
    window: ApprovalWindow | None = None

    def blocks(self) -> list[Block]:
        """The card in the thread (deciding buttons unless they went by DM)."""
        return self._blocks(deciding=self.reach.decided_in_channel, note=None)

    def copy_blocks(self) -> list[Block]:
        """A copy in someone's direct messages: every button, and its note."""
        return self._blocks(deciding=True, note=self.note or copy_note(
            channel=self.run.channel, stands_in_for=None, away_until=None))  # fmt: skip

    def _blocks(self, *, deciding: bool, note: str | None) -> list[Block]:
        return cards.approval_card_blocks(
            run=self.run, approval=self.approval, voters=self.voters, not_run=self.not_run,
            standing=self.standing, reach=self.reach, deciding=deciding, note=note,
            window=self.window,
        )  # fmt: skip


ThreadNotice = (
    ApprovalReminder
    | ApprovalExpired
    | RunFinished
    | RunFailed
    | RunCancelled
    | RunPaused
    | RunUnpaused
    | ResumeStalled
    | RunNeedsMigration
    | ApprovalEscalated
    | ApproversMentioned
)
"""The events told as one message in the run's thread (the others post or update a card,
or go by direct message)."""


def thread_text(event: ThreadNotice) -> str:
    """The message a thread notice posts in the run's thread."""
    match event:
        case ApprovalReminder(approval=approval, approvers=approvers):
            return run_thread.reminder_text(approval, approvers)
        case ApprovalExpired(approval=approval):
            return run_thread.expired_text(approval)
        case RunFinished(final_output=final_output, status=status):
            return run_thread.final_answer_text(final_output=final_output, status=status)
        case RunFailed(error=error):
            return run_thread.run_failed_text(error)
        case RunCancelled(actor=actor, reason=reason):
            return run_thread.run_cancelled_text(actor, reason)
        case RunPaused(actor=actor, reason=reason):
            return run_thread.run_paused_text(actor, reason)
        case RunUnpaused(actor=actor):
            return run_thread.run_unpaused_text(actor)
        case ResumeStalled(attempts=attempts):
            return run_thread.resume_stalled_text(attempts)
        case RunNeedsMigration(reason=reason):
            return run_thread.needs_migration_text(reason)
        case ApprovalEscalated(approval=approval, escalation=escalation):
            return run_thread.escalated_text(approval, escalation)
        case ApproversMentioned(approval=approval, approvers=approvers):
            return run_thread.mentioned_text(approval, approvers)
