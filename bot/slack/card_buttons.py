"""Card buttons and the modals they open: decide, approve with changes, revoke,
reconcile an uncertain call, read a cut call whole.

A click is acknowledged at once; the modal opens after the ack (a decide/edit/revoke
click first asks the service what the person may do, so a refusal is an ephemeral line,
not a form that cannot succeed). A call whose arguments the card cuts opens the reading
modal instead (bot.slack.reading) until the person has read them whole. What the modals'
submissions do is bot.slack.interactions.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from bot.errors import ApprovalsError, InputError
from bot.review.snapshot import ReviewSnapshot
from bot.service import ApprovalView
from bot.slack.actions import ACTIONS, Action
from bot.slack.after_ack import Ack, Responder
from bot.slack.blocks import snapshot_text
from bot.slack.cards import ButtonClick, parse_button_click
from bot.slack.decision_modal import decision_modal
from bot.slack.edit_modal import edit_modal, editable_arguments
from bot.slack.messages import replies
from bot.slack.modals import ModalContext, notice_modal
from bot.slack.reading import ReadingInteractions
from bot.slack.reconcile_modal import reconcile_modal

log = logging.getLogger(__name__)

UNKNOWN_TOOL = "the call"  # what the reconcile form names when the call is no longer found


class CardButtons:
    def __init__(self, responder: Responder) -> None:
        self._r = responder
        self.reading = ReadingInteractions(responder, modal_for=self._modal_for)

    # -- buttons ----------------------------------------------------------------------

    async def on_card_button(self, ack: Ack, body: Mapping[str, Any]) -> None:
        await ack()
        try:
            click = parse_button_click(body)
        except InputError as error:
            log.warning("ignoring a malformed button click: %s", error)
            return
        self._r.later(
            partial(self._open_modal, click),
            name=f"slack:modal:{click.approval_id}",
            on_failure=partial(self._answer, click),
        )

    async def _open_modal(self, click: ButtonClick) -> None:
        context = ModalContext(
            approval_id=click.approval_id, action=click.action, channel_id=click.channel_id
        )
        try:
            view = await self._modal_for(click, context)
            if view is None:
                return
            outcome = await self._r.slack.open_view(trigger_id=click.trigger_id, view=view)
        except ApprovalsError as error:
            await self._refuse(click, replies.warning(error))
            return
        if outcome == "trigger_expired":
            await self._answer(click, replies.TRIGGER_EXPIRED_TEXT, trigger_used=True)

    async def _modal_for(self, click: ButtonClick, context: ModalContext) -> dict[str, Any] | None:
        """The modal to open (the form the action's row names), or None after telling the
        person why there is none."""
        action = ACTIONS[click.action]
        if action.opens == "reconcile":
            return reconcile_modal(context=context, tool_name=await self._uncertain_tool(click))
        view = await self._r.service.approval_view(click.approval_id, viewer=click.user_id)
        if action.opens == "reading":
            await self.reading.open(click, view)
            return None
        refused = _refusal(action, view)
        if refused is not None:
            await self._refuse(click, refused)
            return None
        if action.reads_first and view.must_read and not view.has_read:
            await self.reading.open(click, view)  # the whole arguments first
            return None
        approval = view.approval
        context = replace(context, digest=approval.arguments_digest)  # what the modal shows
        call = snapshot_text(approval)
        if action.opens == "decision":
            stand = approval.tool_name if view.can_stand else None
            window = None if view.window is None else (approval.tool_name, view.window)
            return decision_modal(context=context, call=call, tool_name=stand, window=window)
        arguments = editable_arguments(ReviewSnapshot.from_json(approval.snapshot))
        if arguments is None:
            await self._refuse(click, replies.TOO_BIG_TO_EDIT_TEXT)
            return None
        return edit_modal(context=context, call=call, arguments=arguments)

    async def _uncertain_tool(self, click: ButtonClick) -> str:
        """The uncertain call's tool, as the service describes the call. A call no longer
        uncertain (reconciled meanwhile) still gets its form: submitting it says why
        nothing changed, as it always did."""
        run_id, execution_key = click.uncertain_call
        try:
            call = await self._r.service.uncertain_call(run_id, call=execution_key)
        except ApprovalsError as error:
            log.info("reconcile form for %s without its tool: %s", click.approval_id, error)
            return UNKNOWN_TOOL
        return call.tool_name

    async def _refuse(self, click: ButtonClick, text: str) -> None:
        """Say why nothing opens (see `_answer`)."""
        await self._answer(click, text)

    async def _answer(self, click: ButtonClick, text: str, *, trigger_used: bool = False) -> None:
        """Tell the person who clicked: privately in the card's channel where Slack
        shows them an ephemeral message. Where it does not (a click in App Home has no
        channel; someone who is not a member of the channel gets `user_not_in_channel`),
        in a small modal on the click's trigger while it is unused and fresh, else
        through the click's response_url."""
        if click.channel_id is not None and await self._r.tell(
            click.channel_id, click.user_id, text
        ):
            return
        if not trigger_used:
            try:
                view = notice_modal(text)
                opened = await self._r.slack.open_view(trigger_id=click.trigger_id, view=view)
            except ApprovalsError as error:
                log.warning("could not show %s a notice: %s", click.user_id, error)
            else:
                if opened == "opened":
                    return
        if not await self._r.respond(click.response_url, click.user_id, text):
            log.warning("nothing told %s of: %s", click.user_id, text[:200])


def _refusal(action: Action, view: ApprovalView) -> str | None:
    """Why the viewer may not use `action` on the approval now (None: they may): only a
    revocation reaches a closed approval, and the action's row names the allowed action
    it needs."""
    approval = view.approval
    if approval.status != "pending" and action.allowed_by != "revoke":
        return replies.already_decided_text(
            status=approval.status, decider=approval.decider, decided_at=approval.decided_at
        )
    if action.allowed_by is None or action.allowed_by in view.allowed_actions():
        return None
    if action.allowed_by == "revoke":
        return replies.MAY_NOT_REVOKE_TEXT
    return replies.may_not_decide_text(view.why_not)
