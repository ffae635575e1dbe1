"""Card buttons and the modals they open: decide, approve with changes, revoke,
reconcile an uncertain call.

A click is acknowledged at once; the modal opens after the ack (a decide/edit/revoke
click first asks the service what the person may do, so a refusal is an ephemeral line,
not a form that cannot succeed). Submissions with bad input are answered inline; the
decision itself runs after the ack, except "Approve with changes", whose schema errors
must be shown inline: it waits up to EDIT_INLINE_SECONDS for the service before
answering, and past that answers and reports later.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from bot.errors import ApprovalsError, InputError
from bot.review import ReviewSnapshot
from bot.service import DecisionResult
from bot.slack import messages
from bot.slack.after_ack import Ack, Responder
from bot.slack.blocks import escape, snapshot_text
from bot.slack.cards import ButtonClick, parse_button_click
from bot.slack.decision_modal import (
    DecisionSubmission,
    decision_modal,
    parse_decision_submission,
)
from bot.slack.edit_modal import edit_modal, editable_arguments, parse_edit_submission
from bot.slack.home import publish_home
from bot.slack.modals import InvalidSubmission, ModalContext, notice_modal
from bot.slack.reconcile_modal import (
    ReconcileSubmission,
    parse_reconcile_submission,
    reconcile_modal,
)

log = logging.getLogger(__name__)
Submission = TypeVar("Submission")

EDIT_INLINE_SECONDS = 2.0  # Slack waits 3 s for a view_submission answer
UNKNOWN_TOOL = "the call"  # what the reconcile form names when the call is no longer found


async def _valid_submission(
    ack: Ack,
    parse: Callable[[Mapping[str, Any]], Submission | InvalidSubmission],
    body: Mapping[str, Any],
    *,
    what: str,
) -> Submission | None:
    """A modal's submission, parsed; None when Slack has been answered already: a
    malformed one is acknowledged and ignored, one with bad input gets its field errors."""
    try:
        parsed = parse(body)
    except InputError as error:
        log.warning("ignoring a malformed %s: %s", what, error)
        await ack()
        return None
    if isinstance(parsed, InvalidSubmission):
        await ack(response_action="errors", errors=dict(parsed.errors))
        return None
    return parsed


class CardInteractions:
    def __init__(self, responder: Responder) -> None:
        self._r = responder

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
            on_failure=partial(self._r.tell, click.channel_id, click.user_id),
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
            await self._refuse(click, messages.warning(error))
            return
        if outcome == "trigger_expired":
            await self._r.tell(click.channel_id, click.user_id, messages.TRIGGER_EXPIRED_TEXT)

    async def _modal_for(self, click: ButtonClick, context: ModalContext) -> dict[str, Any] | None:
        """The modal to open, or None after telling the person why there is none."""
        if click.action in ("result", "retry", "abort"):
            return reconcile_modal(context=context, tool_name=await self._uncertain_tool(click))
        view = await self._r.service.approval_view(click.approval_id, viewer=click.user_id)
        approval = view.approval
        refused: str | None = None
        if approval.status != "pending" and click.action != "revoke":
            refused = messages.already_decided_text(
                status=approval.status, decider=approval.decider, decided_at=approval.decided_at
            )
        elif click.action == "revoke" and not view.can_revoke:
            refused = messages.MAY_NOT_REVOKE_TEXT
        elif click.action != "revoke" and not view.can_decide:
            refused = messages.may_not_decide_text(view.why_not)
        if refused is not None:
            await self._refuse(click, refused)
            return None
        context = replace(context, digest=approval.arguments_digest)  # what the modal shows
        call = snapshot_text(approval)
        if click.action != "edit":
            stand = approval.tool_name if view.can_stand else None
            return decision_modal(context=context, call=call, tool_name=stand)
        arguments = editable_arguments(ReviewSnapshot.from_json(approval.snapshot))
        if arguments is None:
            await self._refuse(click, messages.TOO_BIG_TO_EDIT_TEXT)
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
        """Say why nothing opens: privately in the card's channel, or, for a click in
        App Home (no channel), in a small modal on the click's trigger."""
        if click.channel_id is not None:
            await self._r.tell(click.channel_id, click.user_id, text)
            return
        try:
            await self._r.slack.open_view(trigger_id=click.trigger_id, view=notice_modal(text))
        except ApprovalsError as error:
            log.warning("could not tell %s why nothing opened: %s", click.user_id, error)

    async def _after(self, channel: str | None, user: str) -> None:
        """A decision made from App Home (no channel): show the person their new Home."""
        if channel is None:
            await publish_home(self._r, user)

    # -- the reason modal: approve, reject, revoke --------------------------------------

    async def on_decision_submission(self, ack: Ack, body: Mapping[str, Any]) -> None:
        parsed = await _valid_submission(
            ack, parse_decision_submission, body, what="view submission"
        )
        if parsed is None:
            return
        await ack()
        self._r.later(
            partial(self._decide, parsed),
            name=f"slack:decide:{parsed.approval_id}",
            on_failure=partial(self._r.tell, parsed.channel_id, parsed.user_id),
        )

    async def _decide(self, submission: DecisionSubmission) -> None:
        await self._decision(submission)
        await self._after(submission.channel_id, submission.user_id)

    async def _decision(self, submission: DecisionSubmission) -> None:
        try:
            if submission.action == "revoke":
                await self._r.service.revoke(
                    submission.approval_id, actor=submission.user_id, reason=submission.reason
                )
                return
            result = await self._r.service.decide(
                submission.approval_id,
                approve=submission.action == "approve",
                decider=submission.user_id,
                reason=submission.reason,
                message=submission.message,
                digest=submission.digest,
                always=submission.always,
            )
        except ApprovalsError as error:
            text = messages.refused_text(error)
            await self._r.tell(submission.channel_id, submission.user_id, text)
            return
        await self._counted(submission.channel_id, submission.user_id, result)

    async def _counted(self, channel: str | None, user: str, result: DecisionResult) -> None:
        """A vote that did not close the approval: say where the count stands."""
        if result.approval.status == "pending":
            text = messages.vote_counted_text(
                count=result.approvals_count, required=result.required, voters=result.voters
            )
            await self._r.tell(channel, user, text)

    # -- approve with changes -------------------------------------------------------------

    async def on_edit_submission(self, ack: Ack, body: Mapping[str, Any]) -> None:
        parsed = await _valid_submission(ack, parse_edit_submission, body, what="edit submission")
        if parsed is None:
            return
        edit = self._r.tasks.spawn(
            self._r.service.approve_with_changes(
                parsed.approval_id,
                decider=parsed.user_id,
                reason=parsed.reason,
                arguments=parsed.arguments,
                digest=parsed.digest,
            ),
            name=f"slack:edit:{parsed.approval_id}",
        )
        done, _ = await asyncio.wait({edit}, timeout=EDIT_INLINE_SECONDS)
        if done and isinstance(edit.exception(), InputError):
            text = escape(str(edit.exception()), 1900)
            await ack(response_action="errors", errors={"arguments": text})
            return
        await ack()
        self._r.later(
            partial(self._report_edit, edit, parsed.channel_id, parsed.user_id),
            name=f"slack:edit-report:{parsed.approval_id}",
        )

    async def _report_edit(
        self, edit: asyncio.Task[DecisionResult], channel: str | None, user: str
    ) -> None:
        try:
            result = await asyncio.shield(edit)
        except ApprovalsError as error:
            await self._r.tell(channel, user, messages.refused_text(error))
        else:
            await self._counted(channel, user, result)
        await self._after(channel, user)

    # -- reconcile an uncertain call ---------------------------------------------------

    async def on_reconcile_submission(self, ack: Ack, body: Mapping[str, Any]) -> None:
        parsed = await _valid_submission(
            ack, parse_reconcile_submission, body, what="reconcile submission"
        )
        if parsed is None:
            return
        await ack()
        self._r.later(
            partial(self._reconcile, parsed),
            name=f"slack:reconcile:{parsed.run_id}",
            on_failure=partial(self._r.tell, parsed.channel_id, parsed.user_id),
        )

    async def _reconcile(self, submission: ReconcileSubmission) -> None:
        try:
            await self._r.service.reconcile(
                submission.run_id,
                actor=submission.user_id,
                call=submission.execution_key,
                resolution=submission.resolution,
                reason=submission.reason,
            )
        except ApprovalsError as error:
            text = messages.refused_text(error)
            await self._r.tell(submission.channel_id, submission.user_id, text)
            return
        await self._r.tell(submission.channel_id, submission.user_id, messages.RECONCILED_TEXT)
