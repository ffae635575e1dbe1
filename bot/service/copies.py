"""Copies of review cards in people's direct messages: planned, sent, kept up to date.

Under a rule that sends direct messages (`notify = "dm"` or `"both"`), a call's
audience (bot.service.audience) is planned in the store before its card is posted in
the thread, so that the card can say where it went; the copies are then sent in a task
the service owns, one after another. The notifier waits out Slack's rate limits (its
Retry-After), so a burst of cards is slowed down, never dropped; a copy whose sending
failed, or whose sender died, is claimed again by the sweeper (`send_unsent`) once its
claim ran out, up to MAX_ATTEMPTS times. People past the rule's `max_dms` are mentioned
in the thread instead. An escalation step that fires plans copies for its people the
same way (`after_escalation`).

A posted copy is recorded where it went, and every later event that shows the card
updates it with the thread's card (bot.service.workflow: `card_reach`). A decision may
land while a copy is being posted, which would leave that copy showing a pending call;
so once a batch is sent the approval is read again, and if it closed meanwhile every
copy is updated once more.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from itertools import groupby

from bot.service.audience import Audience, audience
from bot.service.events import ApprovalUpdated, ApproversMentioned, DirectCopy
from bot.service.views import build_view
from bot.service.workflow import Workflow
from store.records import ApprovalCopy, ApprovalRecord, FiredEscalation, NewCopy, RunRecord

log = logging.getLogger(__name__)

CLAIM = timedelta(minutes=5)
"""How long a sender holds the copies it is sending (Slack's rate limits may slow a
large fan-out down to a few a minute)."""
MAX_ATTEMPTS = 5


async def plan_request_copies(
    flow: Workflow, run: RunRecord, approval: ApprovalRecord
) -> Audience | None:
    """Plan the copies of a new approval's card (None: its rule sends none, or its run
    is not decided in Slack)."""
    rule = flow.rule_for(approval.tool_name)
    if not rule.routing.sends_dms or run.origin != "slack":
        return None
    return await _plan(flow, approval, await audience(flow, approval, rule.approvers))


def send_planned(
    flow: Workflow, run: RunRecord, approval: ApprovalRecord, planned: Audience | None
) -> None:
    """Send the planned copies (and mention who was left out) in a service task."""
    if planned is not None and (planned.copies or planned.mentioned):
        sending = _send(flow, run, approval, planned.copies, mentioned=planned.mentioned)
        flow.tasks.spawn(sending, name=f"service:copies:{approval.approval_id}")


async def after_escalation(flow: Workflow, run: RunRecord, fired: FiredEscalation) -> None:
    """An escalation step fired: its people get copies (where the rule sends them), and
    the card, wherever it is, says whom it escalated to."""
    approval, step = fired.approval, fired.escalation
    if flow.rule_for(approval.tool_name).routing.sends_dms and run.origin == "slack":
        found = await audience(flow, approval, step.approvers, step=step.step)
        send_planned(flow, run, approval, await _plan(flow, approval, found))
    await refresh_card(flow, run, approval.approval_id)


async def send_unsent(flow: Workflow) -> int:
    """Send the copies whose sender failed or died (a sweeper's pass); how many."""
    now = flow.clock()
    claimed = await flow.store.claim_unsent_copies(
        now=now, claim_until=now + CLAIM, max_attempts=MAX_ATTEMPTS
    )
    by_approval = sorted(claimed, key=lambda copy: copy.approval_id)
    for approval_id, copies in groupby(by_approval, key=lambda copy: copy.approval_id):
        approval = await flow.store.get_approval(approval_id)
        if approval is not None:
            sending = _send(flow, await flow.run_of(approval), approval, list(copies))
            flow.tasks.spawn(sending, name=f"service:copies:{approval_id}")
    return len(claimed)


async def refresh_card(flow: Workflow, run: RunRecord, approval_id: str) -> None:
    """Show the approval as it stands now on its card and every copy."""
    approval = await flow.store.get_approval(approval_id)
    if approval is not None:
        view = await build_view(flow, approval, None)
        standing = await flow.standing(run.run_id)
        await flow.notify(ApprovalUpdated(run=run, view=view, standing=standing))


async def _plan(flow: Workflow, approval: ApprovalRecord, found: Audience) -> Audience:
    """The audience with only the copies this call planned (a person planned before,
    by an earlier step or another replica, is not sent a second copy)."""
    planned = await flow.store.plan_copies(
        approval.approval_id, found.copies, claim_until=flow.clock() + CLAIM
    )
    new = {copy.recipient for copy in planned}
    return Audience(
        copies=[copy for copy in found.copies if copy.recipient in new],
        mentioned=found.mentioned,
    )


async def _send(
    flow: Workflow,
    run: RunRecord,
    approval: ApprovalRecord,
    copies: Sequence[NewCopy | ApprovalCopy],
    *,
    mentioned: Sequence[str] = (),
) -> None:
    """Mention who was left out, send the copies one after another, and show a call
    that closed meanwhile as it is on every copy."""
    if mentioned:
        told = ApproversMentioned(run=run, approval=approval, approvers=tuple(mentioned))
        await flow.notify(told)
    for copy in copies:
        if not await _send_one(flow, run, approval.approval_id, copy.recipient, copy.stands_in_for):
            break
    current = await flow.store.get_approval(approval.approval_id)
    if current is not None and current.status != "pending":
        await refresh_card(flow, run, approval.approval_id)


async def _send_one(
    flow: Workflow, run: RunRecord, approval_id: str, recipient: str, stands_in_for: str | None
) -> bool:
    """Post one copy of the card as it stands; False when the approval closed (no more
    copies to send)."""
    approval = await flow.store.get_approval(approval_id)
    if approval is None or approval.status != "pending":
        return False
    away_until = None
    if stands_in_for is not None:
        absence = (await flow.store.stand_ins_of([stands_in_for], at=flow.clock())).get(
            stands_in_for
        )
        away_until = absence.until if absence is not None else None
    copy = DirectCopy(
        run=run,
        view=await build_view(flow, approval, None),
        recipient=recipient,
        stands_in_for=stands_in_for,
        away_until=away_until,
        standing=await flow.standing(run.run_id),
    )
    location = await flow.notify(copy)
    if location is None:
        log.info("no copy of %s reached %s; the sweeper tries again", approval_id, recipient)
        return True
    channel, ts = location
    await flow.store.copy_posted(approval_id, recipient, channel=channel, ts=ts)
    return True
