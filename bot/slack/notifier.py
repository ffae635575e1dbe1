"""SlackNotifier: the service's notifier, rendered in Slack.

A run's root message roots its thread; review cards, reminders, notices, the answer and
a cancellation go into that thread; a decided or changed approval updates its card in
place, with the run's standing decisions (bot.service.standing) named on it. A run
without a channel (started from code) is told nothing; that is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.service.api import UncertainCall
from bot.service.events import (
    ApprovalDecided,
    ApprovalExpired,
    ApprovalReminder,
    ApprovalRequested,
    ApprovalUpdated,
    CallUncertain,
    Event,
    ExecutionRefused,
    Location,
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
from bot.slack.gateway import SlackGateway
from bot.slack.messages import run_thread
from bot.slack.messages.approval_lines import approval_card_text
from store.records import ApprovalRecord, RunRecord, StandingDecision

log = logging.getLogger(__name__)


class SlackNotifier:
    """Implements bot.service.Notifier with chat.postMessage / chat.update."""

    def __init__(self, gateway: SlackGateway) -> None:
        self._slack = gateway

    async def notify(self, event: Event) -> Location | None:
        match event:
            case RunStarted(run=run, task=task):
                return await self._run_started(run, task)
            case ApprovalRequested(run=run, approval=approval, standing=standing):
                return await self._post_card(run, approval, standing)
            case ApprovalDecided(run=run, approval=approval, standing=standing):
                await self._update_card(run, approval, voters=None, standing=standing)
            case ApprovalUpdated(run=run, view=view, standing=standing):
                await self._update_card(run, view.approval, voters=view.voters, standing=standing)
            case ExecutionRefused(run=run, approval=approval, reason=reason):
                await self._post_in_thread(run, run_thread.execution_refused_text(approval, reason))
                if approval.status == "approved":  # other states already closed the card
                    await self._update_card(run, approval, voters=None, not_run=reason)
            case CallUncertain(run=run, call=call):
                await self._post_uncertain_card(run, call)
            case _:
                await self._post_in_thread(event.run, thread_text(event))
        return None

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
        return (run.channel, await self._slack.post(channel=run.channel, text=text, blocks=root))

    async def _post_card(
        self, run: RunRecord, approval: ApprovalRecord, standing: Sequence[StandingDecision]
    ) -> Location | None:
        if run.channel is None:
            return None
        ts = await self._slack.post(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=approval_card_text(approval),
            blocks=cards.approval_card_blocks(
                run=run, approval=approval, voters=(), standing=standing
            ),
        )
        return (run.channel, ts)

    async def _post_uncertain_card(self, run: RunRecord, call: UncertainCall) -> None:
        if run.channel is None:
            log.info("run %s has no channel; call %s is uncertain", run.run_id, call.tool_call_id)
            return
        await self._slack.post(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=run_thread.uncertain_call_text(call),
            blocks=cards.uncertain_card_blocks(run=run, call=call),
        )

    async def _update_card(
        self,
        run: RunRecord,
        approval: ApprovalRecord,
        *,
        voters: Sequence[str] | None,
        not_run: str | None = None,
        standing: Sequence[StandingDecision] = (),
    ) -> None:
        if approval.slack_channel is None or approval.slack_ts is None:
            return
        await self._slack.update(
            channel=approval.slack_channel,
            ts=approval.slack_ts,
            text=approval_card_text(approval),
            blocks=cards.approval_card_blocks(
                run=run, approval=approval, voters=voters, not_run=not_run, standing=standing
            ),
        )

    async def _post_in_thread(self, run: RunRecord, text: str) -> None:
        if run.channel is None:
            log.info("run %s has no channel; a thread message was not posted", run.run_id)
            return
        await self._slack.post(channel=run.channel, thread_ts=run.thread_ts, text=text)


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
)
"""The events told as one message in the run's thread (the others post or update a card)."""


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
