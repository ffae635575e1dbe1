"""The submissions of the card's modals: decide (approve, reject, revoke), approve with
changes, reconcile an uncertain call. The buttons that open them are
bot.slack.card_buttons. Submissions with bad input are answered inline.

A decision (approve, reject, revoke, approve with changes) is committed before the
submission is answered: Slack closes the modal on our answer, and a person must not see
"done" for a decision a crash could still lose. The commit (`record_*`, ~1 ms on SQLite)
gets SUBMISSION_BUDGET_SECONDS; what follows it (the card update, the resume) runs after
the answer, in owned tasks. When the database does not answer in time, the modal stays
open with an inline error; the commit goes on in its task, and the person is told
privately when it lands (then the follow-ups run) or fails. An error of the database
itself keeps the modal open too ("not recorded; submit again"). A refusal (closed,
not an approver) closes the modal and is told privately, as before; an edit whose
arguments do not fit the tool is answered inline and logged as the person's error (one
line, without the values they typed).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, TypeVar

from bot.errors import (
    ApprovalsError,
    ArgumentsUnreadError,
    InputError,
    KeyMissingError,
    StoreError,
)
from bot.service import DecisionResult, Recorded
from bot.slack.after_ack import Ack, Responder
from bot.slack.blocks import escape
from bot.slack.cards import read_first_blocks
from bot.slack.decision_modal import (
    DecisionSubmission,
    parse_decision_submission,
)
from bot.slack.edit_modal import (
    ARGUMENTS_BLOCK_ID,
    parse_edit_submission,
)
from bot.slack.home import publish_home
from bot.slack.messages import replies
from bot.slack.messages.replies import NOT_RECORDED_TEXT, NOT_RECORDED_YET_TEXT
from bot.slack.modals import REASON_BLOCK_ID, InvalidSubmission
from bot.slack.reconcile_modal import (
    ReconcileSubmission,
    parse_reconcile_submission,
)

log = logging.getLogger(__name__)
Submission = TypeVar("Submission")
T = TypeVar("T")

SUBMISSION_BUDGET_SECONDS = 2.0  # for the commit; Slack waits 3 s for the answer


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

    async def _after(self, channel: str | None, user: str) -> None:
        """A decision made from App Home (no channel): show the person their new Home."""
        if channel is None:
            await publish_home(self._r, user)

    # -- committing a submission's decision before the answer -----------------------------

    async def _commit(
        self, ack: Ack, record: Awaitable[Recorded[Any]], *, what: str, late: Settle
    ) -> Recorded[Any] | ApprovalsError | None:
        """`record` (the decision's commit) within the budget: its outcome, a recorded
        decision or why it was refused; None when Slack has been answered already (the
        database failed, or did not answer in time: `late` gets the outcome after the
        answer, whenever the commit ends)."""
        task = self._r.tasks.spawn(_captured(record), name=f"slack:record:{what}")
        done, _ = await asyncio.wait({task}, timeout=SUBMISSION_BUDGET_SECONDS)
        if not done:
            log.warning("%s: the database did not answer in time; the modal stays open", what)
            await ack(response_action="errors", errors={REASON_BLOCK_ID: NOT_RECORDED_YET_TEXT})
            self._r.later(partial(_when_done, task, late), name=f"slack:late:{what}")
            return None
        outcome = task.result()
        if isinstance(outcome, KeyMissingError):  # not the database: this process's keys
            log.warning("%s not recorded: %s", what, outcome)
            why = f"Not recorded: this bot lacks key {outcome.key_id}; try again once it has it."
            await ack(response_action="errors", errors={REASON_BLOCK_ID: why})
            return None
        if isinstance(outcome, StoreError):
            log.warning("%s not recorded: %s", what, outcome)
            await ack(response_action="errors", errors={REASON_BLOCK_ID: NOT_RECORDED_TEXT})
            return None
        return outcome

    async def _settle(
        self, channel: str | None, user: str, outcome: Recorded[Any] | ApprovalsError
    ) -> None:
        """After the answer: say why nothing changed, or finish the recorded decision
        (card, resume) and say where the count stands."""
        if isinstance(outcome, ApprovalsError):
            await self._tell_refused(channel, user, outcome)
        else:
            try:
                result = await outcome.finish()
            except ApprovalsError as error:
                await self._tell_refused(channel, user, error)
            else:
                if isinstance(result, DecisionResult):
                    await self._counted(channel, user, result)
        await self._after(channel, user)

    async def _settle_late(
        self,
        approval_id: str,
        channel: str | None,
        user: str,
        outcome: Recorded[Any] | ApprovalsError,
    ) -> None:
        """The commit ended after the modal was told "not recorded yet"."""
        if isinstance(outcome, StoreError):
            log.warning("decision on %s by %s not recorded: %s", approval_id, user, outcome)
            await self._r.tell(channel, user, replies.not_recorded_late_text(approval_id))
            return
        if isinstance(outcome, Recorded):
            await self._r.tell(channel, user, replies.recorded_late_text(approval_id))
        await self._settle(channel, user, outcome)

    def _settle_later(
        self,
        approval_id: str,
        channel: str | None,
        user: str,
        outcome: Recorded[Any] | ApprovalsError,
    ) -> None:
        self._r.later(
            partial(self._settle, channel, user, outcome),
            name=f"slack:decided:{approval_id}",
            on_failure=partial(self._r.tell, channel, user),
        )

    # -- the reason modal: approve, reject, revoke --------------------------------------

    async def on_decision_submission(self, ack: Ack, body: Mapping[str, Any]) -> None:
        parsed = await _valid_submission(
            ack, parse_decision_submission, body, what="view submission"
        )
        if parsed is None:
            return
        where = (parsed.approval_id, parsed.channel_id, parsed.user_id)
        outcome = await self._commit(
            ack,
            self._record(parsed),
            what=f"{parsed.action} of {parsed.approval_id} by {parsed.user_id}",
            late=partial(self._settle_late, *where),
        )
        if outcome is None:
            return
        await ack()
        self._settle_later(*where, outcome)

    def _record(self, submission: DecisionSubmission) -> Awaitable[Recorded[Any]]:
        service = self._r.service
        if submission.action == "revoke":
            return service.record_revocation(
                submission.approval_id, actor=submission.user_id, reason=submission.reason
            )
        return service.record_decision(
            submission.approval_id,
            approve=submission.action == "approve",
            decider=submission.user_id,
            reason=submission.reason,
            message=submission.message,
            digest=submission.digest,
            always=submission.always,
            window=submission.window,
        )

    async def _tell_refused(self, channel: str | None, user: str, error: ApprovalsError) -> None:
        """Why a decision changed nothing; with the button to read the call whole when
        that is what is missing."""
        text = replies.refused_text(error)
        blocks = None
        if isinstance(error, ArgumentsUnreadError):
            blocks = read_first_blocks(error.approval_id, text)
        await self._r.tell(channel, user, text, blocks=blocks)

    async def _counted(self, channel: str | None, user: str, result: DecisionResult) -> None:
        """A vote that did not close the approval: say where the count stands."""
        if result.approval.status == "pending":
            text = replies.vote_counted_text(
                count=result.approvals_count, required=result.required, voters=result.voters
            )
            await self._r.tell(channel, user, text)

    # -- approve with changes -------------------------------------------------------------

    async def on_edit_submission(self, ack: Ack, body: Mapping[str, Any]) -> None:
        parsed = await _valid_submission(ack, parse_edit_submission, body, what="edit submission")
        if parsed is None:
            return
        what = f"approve with changes of {parsed.approval_id} by {parsed.user_id}"
        where = (parsed.approval_id, parsed.channel_id, parsed.user_id)
        record = self._r.service.record_changes(
            parsed.approval_id,
            decider=parsed.user_id,
            reason=parsed.reason,
            arguments=parsed.arguments,
            digest=parsed.digest,
        )
        outcome = await self._commit(
            ack, record, what=what, late=partial(self._settle_late, *where)
        )
        if outcome is None:
            return
        if isinstance(outcome, InputError):  # the person's error: theirs to fix, in place
            log.info("%s: not accepted (%s), answered in the modal", what, type(outcome).__name__)
            errors = {ARGUMENTS_BLOCK_ID: escape(str(outcome), 1900)}
            await ack(response_action="errors", errors=errors)
            return
        await ack()
        self._settle_later(*where, outcome)

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
            text = replies.refused_text(error)
            await self._r.tell(submission.channel_id, submission.user_id, text)
            return
        await self._r.tell(submission.channel_id, submission.user_id, replies.RECONCILED_TEXT)


Settle = Callable[["Recorded[Any] | ApprovalsError"], Awaitable[None]]


async def _captured(work: Awaitable[T]) -> T | ApprovalsError:
    """`work`'s result, or the error of ours it raised (a refusal is an answer, not a
    failed task: nothing to log with a traceback)."""
    try:
        return await work
    except ApprovalsError as error:
        return error


async def _when_done(task: asyncio.Task[Recorded[Any] | ApprovalsError], then: Settle) -> None:
    await then(await asyncio.shield(task))
