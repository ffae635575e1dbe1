"""The modal behind an uncertain call's Record result / Retry / Abort buttons.

Record result asks for the verified result (what the call really did, which the model
will see) and a reason; Retry and Abort ask for a reason only, as a confirmation that
lands in the audit log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError
from bot.runtime import AbortCall, RetryCall, VerifiedResult
from bot.runtime.decisions import Resolution
from bot.slack.approvals_command import MAX_RESULT_CHARS
from bot.slack.payloads import (
    MAX_REASON_CHARS,
    REASON_ACTION_ID,
    REASON_BLOCK_ID,
    InvalidSubmission,
    ModalContext,
    decode_modal_context,
    encode_modal_context,
    input_value,
    mapping_field,
    text_field,
)

RECONCILE_CALLBACK_ID = "uncertain_reconcile"
RESULT_BLOCK_ID = "verified_result"
RESULT_ACTION_ID = "verified_result_input"

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
    action = context.action
    if action not in _TITLES:
        raise InputError(f"{action!r} is not a reconciliation")
    blocks: list[dict[str, Any]] = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": f"`{tool_name[:200]}`: {_EXPLAIN[action]}"},
        }
    ]
    if action == "result":
        blocks.append(
            _input(RESULT_BLOCK_ID, RESULT_ACTION_ID, "Verified result", MAX_RESULT_CHARS)
        )
    blocks.append(_input(REASON_BLOCK_ID, REASON_ACTION_ID, "Reason", MAX_REASON_CHARS))
    return {
        "type": "modal",
        "callback_id": RECONCILE_CALLBACK_ID,
        "private_metadata": encode_modal_context(context),
        "title": {"type": "plain_text", "text": _TITLES[action]},
        "submit": {"type": "plain_text", "text": "Reconcile"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks,
    }


def parse_reconcile_submission(
    body: Mapping[str, Any],
) -> ReconcileSubmission | InvalidSubmission:
    view = mapping_field(body, "view")
    if view.get("callback_id") != RECONCILE_CALLBACK_ID:
        raise InputError(f"unexpected view callback_id {view.get('callback_id')!r}")
    context = decode_modal_context(text_field(view, "private_metadata"))
    run_id, sep, execution_key = context.approval_id.partition(":")
    if not sep or not run_id or not execution_key or context.action not in _TITLES:
        raise InputError("this reconcile form does not name an uncertain call")
    values = mapping_field(mapping_field(view, "state"), "values")
    reason = input_value(values, REASON_BLOCK_ID, REASON_ACTION_ID)
    result = input_value(values, RESULT_BLOCK_ID, RESULT_ACTION_ID)
    errors: dict[str, str] = {}
    if not reason:
        errors[REASON_BLOCK_ID] = "Give a reason: it goes into the audit log."
    if context.action == "result" and not result:
        errors[RESULT_BLOCK_ID] = "Say what the call really did (the agent sees this)."
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
        user_id=text_field(mapping_field(body, "user"), "id"),
        resolution=resolution,
        reason=reason,
    )


def _input(block_id: str, action_id: str, label: str, max_length: int) -> dict[str, Any]:
    return {
        "type": "input",
        "block_id": block_id,
        "label": {"type": "plain_text", "text": label},
        "element": {
            "type": "plain_text_input",
            "action_id": action_id,
            "multiline": True,
            "max_length": max_length,
        },
    }
