"""Reading a call whole, in Slack: the listeners behind "Read all arguments".

A call whose arguments the card cuts counts an approval only from someone who has read
them whole (bot.service.reading). "Read all arguments" on the card (or in the ephemeral
refusal of an unread approval) opens the reading modal at page 1; so do Approve and
Approve with changes while the person has not read the current arguments, and then the
last page offers to continue to that form. "Next page" replaces the modal with the next
page (views.update, guarded by the modal's hash so a double click changes nothing). When
the last page has been shown, the service is told (`read_in_full`); if the arguments
changed meanwhile the reading starts over from the new page 1, with a note.

Every step asks the service for the approval as the person sees it, so someone who may
not see the call (not a member of its channel) is told so and shown nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from bot.errors import ApprovalsError, InputError
from bot.service import ApprovalView
from bot.slack.actions import READS_FIRST
from bot.slack.after_ack import Ack, Responder
from bot.slack.cards import ButtonClick
from bot.slack.messages import forms, replies
from bot.slack.modals import ModalContext
from bot.slack.reading_modal import (
    ReadingClick,
    parse_reading_click,
    reading_modal,
    whole_arguments,
)

log = logging.getLogger(__name__)

ModalFor = Callable[[ButtonClick, ModalContext], Awaitable[dict[str, Any] | None]]
"""Builds the form a card button opens (None: the person was told why not)."""


class ReadingInteractions:
    def __init__(self, responder: Responder, *, modal_for: ModalFor) -> None:
        self._r = responder
        self._modal_for = modal_for

    async def open(self, click: ButtonClick, view: ApprovalView) -> None:
        """Open the reading modal at page 1 on the click's trigger; a modal opened by
        Approve or Approve with changes continues to that form from its last page."""
        context = ModalContext(
            approval_id=view.approval.approval_id,
            action=click.action if click.action in READS_FIRST else "read",
            channel_id=click.channel_id,
            digest=view.approval.arguments_digest,
        )
        whole = whole_arguments(view.approval.snapshot)
        modal = reading_modal(
            context=context,
            tool_name=view.approval.tool_name,
            whole=whole,
            page=1,
            may_continue=view.can_decide,
        )
        outcome = await self._r.slack.open_view(trigger_id=click.trigger_id, view=modal)
        if outcome == "trigger_expired":
            await self._r.tell(click.channel_id, click.user_id, replies.TRIGGER_EXPIRED_TEXT)
        elif len(whole.pages) == 1:
            await self._has_read(click.user_id, context)

    # -- inside the modal ------------------------------------------------------------

    async def on_next_page(self, ack: Ack, body: Mapping[str, Any]) -> None:
        await self._later(ack, body, self._next_page, what="next page")

    async def on_continue(self, ack: Ack, body: Mapping[str, Any]) -> None:
        await self._later(ack, body, self._continue, what="continue")

    async def _later(
        self,
        ack: Ack,
        body: Mapping[str, Any],
        work: Callable[[ReadingClick], Awaitable[None]],
        *,
        what: str,
    ) -> None:
        await ack()
        try:
            click = parse_reading_click(body)
        except InputError as error:
            log.warning("ignoring a malformed %s click: %s", what, error)
            return
        self._r.later(
            partial(work, click),
            name=f"slack:read:{click.context.approval_id}",
            on_failure=partial(self._r.tell, click.context.channel_id, click.user_id),
        )

    async def _next_page(self, click: ReadingClick) -> None:
        view = await self._view(click)
        if view is None:
            return
        context, page, note = click.context, click.page, None
        if view.approval.arguments_digest != context.digest:
            context = replace(context, digest=view.approval.arguments_digest)
            page, note = 1, forms.ARGUMENTS_CHANGED_TEXT
        whole = whole_arguments(view.approval.snapshot)
        page = page if page <= len(whole.pages) else 1
        modal = reading_modal(
            context=context,
            tool_name=view.approval.tool_name,
            whole=whole,
            page=page,
            may_continue=view.can_decide,
            note=note,
        )
        shown = await self._r.slack.update_view(
            view_id=click.view_id, view_hash=click.view_hash, view=modal
        )
        if shown == "updated" and page == len(whole.pages):
            await self._has_read(click.user_id, context)

    async def _continue(self, click: ReadingClick) -> None:
        """Replace the reading modal with the form it was opened for."""
        if click.context.action not in READS_FIRST:
            return
        button = ButtonClick(
            action=click.context.action,
            approval_id=click.context.approval_id,
            user_id=click.user_id,
            channel_id=click.context.channel_id,
            message_ts=None,
            trigger_id=click.trigger_id,
        )
        form = await self._modal_for(button, replace(click.context, digest=None))
        if form is not None:
            await self._r.slack.update_view(
                view_id=click.view_id, view_hash=click.view_hash, view=form
            )

    async def _view(self, click: ReadingClick) -> ApprovalView | None:
        """The approval as the person sees it now; None after telling them why not."""
        try:
            return await self._r.service.approval_view(
                click.context.approval_id, viewer=click.user_id
            )
        except ApprovalsError as error:
            await self._r.tell(click.context.channel_id, click.user_id, replies.warning(error))
            return None

    async def _has_read(self, user: str, context: ModalContext) -> None:
        """The person was shown the last page: their approval may count now."""
        assert context.digest is not None  # the reading modal always carries it
        try:
            await self._r.service.read_in_full(
                context.approval_id, viewer=user, digest=context.digest
            )
        except ApprovalsError as error:  # changed or hidden meanwhile: it does not count
            log.info("read of %s by %s not recorded: %s", context.approval_id, user, error)
