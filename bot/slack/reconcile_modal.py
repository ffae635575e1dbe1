"""The modal behind an uncertain call's Record result / Retry / Abort buttons.

Record result asks for the verified result (what the call really did, which the model
will see) and a reason; Retry and Abort ask for a reason only, as a confirmation that
lands in the audit log. The modal names the call's tool, as the service describes the
call (`ApprovalService.uncertain_call`). What it submits is the runtime's `Resolution`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError
from bot.runtime import AbortCall, Resolution, RetryCall, VerifiedResult
from bot.slack.blocks import escape, mrkdwn_section, text_input
from bot.slack.cards import parse_uncertain_call_value
from bot.slack.messages.forms import GIVE_A_REASON, GIVE_THE_RESULT
from bot.slack.modals import (
    REASON_ACTION_ID,
    REASON_BLOCK_ID,
    InvalidSubmission,
    ModalContext,
    input_value,
    modal,
    reason_input,
    submitted_view,
    submitter,
)

RECONCILE_CALLBACK_ID = "uncertain_reconcile"
RESULT_BLOCK_ID = "verified_result"
RESULT_ACTION_ID = "verified_result_input"
MAX_RESULT_CHARS = 4000

_TITLES = {"result": "Record result", "retry": "Retry the call", "abort": "Abort the call"}
_EXPLAIN = {
    "result": "Check the downstream system first. The result you record becomes the call's "
    "result: the agent sees it and the call is never run again.",
    "retry": "The call runs again with the same execution key. It may take effect twice "
    "if it already did.",
    "abort": "The call does not run again; the agent is told its outcome is unknown.",
}


@dataclass(frozen=True, kw_only=True)
class ReconcileSubmission:
    run_id: str
    execution_key: str
    channel_id: str | None
    user_id: str
    resolution: Resolution
    reason: str


def reconcile_modal(*, context: ModalContext, tool_name: str) -> dict[str, Any]:
    """The form for `context.action` (result, retry or abort) on the call of
    `context.approval_id` (`run_id:execution_key`), whose tool is `tool_name`."""
    action = context.action
    if action not in _TITLES:
        raise InputError(f"{action!r} is not a reconciliation")
    blocks = [mrkdwn_section(f"`{escape(tool_name, 200)}`: {_EXPLAIN[action]}")]
    if action == "result":
        blocks.append(
            text_input(
                RESULT_BLOCK_ID,
                RESULT_ACTION_ID,
                label="Verified result",
                max_length=MAX_RESULT_CHARS,
            )
        )
    blocks.append(reason_input(hint=None))
    return modal(
        callback_id=RECONCILE_CALLBACK_ID,
        context=context,
        title=_TITLES[action],
        submit="Reconcile",
        blocks=blocks,
    )


def parse_reconcile_submission(
    body: Mapping[str, Any],
) -> ReconcileSubmission | InvalidSubmission:
    context, values = submitted_view(body, RECONCILE_CALLBACK_ID)
    if context.action not in _TITLES:
        raise InputError("this reconcile form does not name an uncertain call")
    run_id, execution_key = parse_uncertain_call_value(context.approval_id)
    reason = input_value(values, REASON_BLOCK_ID, REASON_ACTION_ID)
    result = input_value(values, RESULT_BLOCK_ID, RESULT_ACTION_ID)
    errors: dict[str, str] = {}
    if not reason:
        errors[REASON_BLOCK_ID] = GIVE_A_REASON
    if context.action == "result" and not result:
        errors[RESULT_BLOCK_ID] = GIVE_THE_RESULT
    if errors or reason is None:
        return InvalidSubmission(errors=errors)
    resolution: Resolution
    if context.action == "result":
        resolution = VerifiedResult(result=result or "")
    elif context.action == "retry":
        resolution = RetryCall()
    else:
        resolution = AbortCall()
    return ReconcileSubmission(
        run_id=run_id,
        execution_key=execution_key,
        channel_id=context.channel_id,
        user_id=submitter(body),
        resolution=resolution,
        reason=reason,
    )
