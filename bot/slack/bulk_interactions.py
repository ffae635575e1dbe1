"""Bulk decisions from App Home: the listeners (the forms are bot.slack.bulk_home and
bot.slack.bulk_modal, the decisions bot.service.bulk).

Ticking a checkbox sends nothing (Slack keeps the ticks in the Home view's state and
sends them with a button press). "Approve selected…" / "Reject selected…" is acknowledged at once;
after the ack the selected calls are read as the person may see them, and the modal
opens with each call whole and what was left out of the selection and why (no longer
pending, not theirs to decide, not read whole). A selection with nothing left to decide
is told in a small dialog instead.

The submission is answered once the votes are committed, as a single decision's is
(bot.slack.interactions): within SUBMISSION_BUDGET_SECONDS the modal turns into the
summary (decided, and not decided with why); past it, into a "recording" notice that the
summary replaces when the commits end. The cards, resumes and the refreshed App Home
follow after the answer, in owned tasks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from functools import partial
from typing import Any, TypeVar

from bot.errors import ApprovalsError, InputError
from bot.service import ApprovalView
from bot.service.bulk import BULK_LIMIT, BulkRecorded
from bot.slack.after_ack import Ack, Responder
from bot.slack.blocks import mrkdwn_section
from bot.slack.bulk_home import BulkClick, parse_bulk_click
from bot.slack.bulk_modal import (
    RECORDING_TEXT,
    BulkSubmission,
    LeftOut,
    bulk_modal,
    failed_modal,
    left_out_text,
    notice,
    parse_bulk_submission,
    summary_modal,
)
from bot.slack.home import publish_home
from bot.slack.interactions import SUBMISSION_BUDGET_SECONDS
from bot.slack.messages import replies
from bot.slack.messages.forms import READ_ALL_LABEL
from bot.slack.modals import InvalidSubmission, notice_modal

log = logging.getLogger(__name__)
T = TypeVar("T")

NOTHING_SELECTED_TEXT = (
    ":information_source: Tick the calls to decide first, then press the button again."
)
UNREAD_TEXT = (
    f"its arguments are too long for the card: read them whole first (*{READ_ALL_LABEL}* "
    "on its card or in your App Home)"
)


class BulkInteractions:
    def __init__(self, responder: Responder) -> None:
        self._r = responder

    # -- the button: open the modal -------------------------------------------------------

    async def on_bulk_button(self, ack: Ack, body: Mapping[str, Any]) -> None:
        await ack()
        try:
            click = parse_bulk_click(body)
        except InputError as error:
            log.warning("ignoring a malformed bulk click: %s", error)
            return
        self._r.later(partial(self._open_modal, click), name=f"slack:bulk:{click.user_id}")

    async def _open_modal(self, click: BulkClick) -> None:
        if not click.selected:
            await self._notice(click, NOTHING_SELECTED_TEXT)
            return
        views, left_out = await self._decidable(click)
        if not views:
            await self._notice(click, left_out_text(left_out))
            return
        modal = bulk_modal(
            action=click.action, tool_name=click.tool_name, views=views, left_out=left_out
        )
        outcome = await self._r.slack.open_view(trigger_id=click.trigger_id, view=modal)
        if outcome == "trigger_expired":
            log.info("bulk modal for %s not opened: the click's trigger expired", click.user_id)

    async def _decidable(self, click: BulkClick) -> tuple[list[ApprovalView], list[LeftOut]]:
        """The selected calls the person may decide now, as they may see them; the others
        with why (the decision checks each again)."""
        views: list[ApprovalView] = []
        left_out: list[LeftOut] = []
        for approval_id in click.selected:
            if len(views) == BULK_LIMIT:
                left_out.append(LeftOut(approval_id=approval_id, why="too many at once"))
                continue
            try:
                view = await self._r.service.approval_view(approval_id, viewer=click.user_id)
            except ApprovalsError as error:
                left_out.append(LeftOut(approval_id=approval_id, why=replies.refused_text(error)))
                continue
            why = _why_left_out(view, click)
            if why is None:
                views.append(view)
            else:
                left_out.append(LeftOut(approval_id=approval_id, why=why))
        return views, left_out

    async def _notice(self, click: BulkClick, text: str) -> None:
        opened = await self._r.slack.open_view(trigger_id=click.trigger_id, view=notice_modal(text))
        if opened != "opened":
            log.info("nothing told %s of: %s", click.user_id, text[:200])

    # -- the submission: commit, answer, then follow up ---------------------------------

    async def on_bulk_submission(self, ack: Ack, body: Mapping[str, Any]) -> None:
        try:
            parsed = parse_bulk_submission(body)
        except InputError as error:
            log.warning("ignoring a malformed bulk submission: %s", error)
            await ack()
            return
        if isinstance(parsed, InvalidSubmission):
            await ack(response_action="errors", errors=dict(parsed.errors))
            return
        record = self._r.service.record_decisions(
            tool_name=parsed.tool_name,
            items=parsed.items,
            approve=parsed.action == "approve",
            decider=parsed.user_id,
            reason=parsed.reason,
            message=parsed.message,
        )
        task = self._r.tasks.spawn(_captured(record), name=f"slack:bulk:{parsed.user_id}")
        done, _ = await asyncio.wait({task}, timeout=SUBMISSION_BUDGET_SECONDS)
        if not done:
            log.warning("bulk decision by %s: the database is slow; told so", parsed.user_id)
            recording = notice([mrkdwn_section(RECORDING_TEXT)], title="Bulk decision")
            await ack(response_action="update", view=recording)
            self._r.later(
                partial(self._late, parsed, task), name=f"slack:bulk:late:{parsed.user_id}"
            )
            return
        outcome = task.result()
        await ack(response_action="update", view=_answer(parsed, outcome))
        self._r.later(
            partial(self._follow_up, parsed, outcome), name=f"slack:bulk:done:{parsed.user_id}"
        )

    async def _late(
        self, parsed: BulkSubmission, task: asyncio.Task[BulkRecorded | ApprovalsError]
    ) -> None:
        outcome = await asyncio.shield(task)
        await self._show(parsed, _answer(parsed, outcome))
        await self._follow_up(parsed, outcome)

    async def _follow_up(
        self, parsed: BulkSubmission, outcome: BulkRecorded | ApprovalsError
    ) -> None:
        """After the answer: each committed vote's card and resume; a refusal only the
        follow-up found (rare: the store answered before) updates the summary."""
        if isinstance(outcome, BulkRecorded):
            result = await outcome.finish()
            if len(result.refused) > len(outcome.refused):
                closed = [decided.approval for decided in result.decided]
                await self._show(
                    parsed,
                    summary_modal(
                        action=parsed.action,
                        tool_name=parsed.tool_name,
                        recorded=closed,
                        refused=result.refused,
                    ),
                )
        await publish_home(self._r, parsed.user_id)

    async def _show(self, parsed: BulkSubmission, view: dict[str, Any]) -> None:
        if parsed.view_id is None:
            return
        try:
            await self._r.slack.update_view(view_id=parsed.view_id, view=view)
        except ApprovalsError as error:
            log.info("bulk summary for %s not shown: %s", parsed.user_id, error)


def _why_left_out(view: ApprovalView, click: BulkClick) -> str | None:
    approval = view.approval
    if approval.tool_name != click.tool_name:
        return "a call of another tool"
    if approval.status != "pending":
        return replies.already_decided_text(
            status=approval.status, decider=approval.decider, decided_at=approval.decided_at
        )
    if not view.can_decide:
        return replies.may_not_decide_text(view.why_not)
    if click.action == "approve" and view.must_read and not view.has_read:
        return UNREAD_TEXT
    return None


def _answer(parsed: BulkSubmission, outcome: BulkRecorded | ApprovalsError) -> dict[str, Any]:
    if isinstance(outcome, ApprovalsError):
        return failed_modal(outcome)
    return summary_modal(
        action=parsed.action,
        tool_name=parsed.tool_name,
        recorded=[recorded.approval for recorded in outcome.recorded],
        refused=outcome.refused,
    )


async def _captured(work: Awaitable[T]) -> T | ApprovalsError:
    try:
        return await work
    except ApprovalsError as error:
        return error
