"""The "Approve with changes" modal: build it from the stored (redacted) snapshot, parse
what comes back.

The arguments are shown as pretty JSON in a multiline input. Redacted values appear as
the marker (bot.review.REDACTED); the service keeps the real value wherever the marker
is left in place, so nobody edits a secret blind and none reaches Slack. Syntax errors
(not JSON, not an object) are answered inline here, without I/O; schema errors come from
the service and are answered inline by the listener.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError
from bot.review import REDACTED, ReviewSnapshot
from bot.slack.blocks import mrkdwn_section, plain_text
from bot.slack.payloads import (
    CALL_BLOCK_ID,
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

EDIT_CALLBACK_ID = "approval_edit_submit"
ARGUMENTS_BLOCK_ID = "arguments"
ARGUMENTS_ACTION_ID = "arguments_input"
MAX_ARGUMENTS_CHARS = 3000  # Block Kit: plain_text_input max_length


@dataclass(frozen=True, kw_only=True)
class EditSubmission:
    approval_id: str
    channel_id: str | None
    user_id: str
    arguments: dict[str, Any]
    reason: str
    digest: str | None = None  # the arguments digest the modal showed


def editable_arguments(snapshot: ReviewSnapshot) -> str | None:
    """The redacted arguments as the modal's initial JSON, or None when they do not fit
    Slack's input (the call cannot be edited from Slack then)."""
    if snapshot.omitted_fields:
        return None  # fields the card does not show cannot be edited blind either
    text = json.dumps(snapshot.arguments, indent=2, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= MAX_ARGUMENTS_CHARS else None


def edit_modal(*, context: ModalContext, call: str | None, arguments: str) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        mrkdwn_section(call or "(the call is shown on the card)", block_id=CALL_BLOCK_ID),
        {
            "type": "input",
            "block_id": ARGUMENTS_BLOCK_ID,
            "label": plain_text("Arguments (JSON)"),
            "hint": plain_text(
                f"Leave {REDACTED} in place to keep a hidden value; replace it to change it. "
                "Approving with changes makes a new digest and earlier approvals no longer "
                "count."
            ),
            "element": {
                "type": "plain_text_input",
                "action_id": ARGUMENTS_ACTION_ID,
                "multiline": True,
                "max_length": MAX_ARGUMENTS_CHARS,
                "initial_value": arguments,
            },
        },
        {
            "type": "input",
            "block_id": REASON_BLOCK_ID,
            "label": plain_text("Reason"),
            "hint": plain_text(
                "Recorded in the audit log with your name. The agent does not see it."
            ),
            "element": {
                "type": "plain_text_input",
                "action_id": REASON_ACTION_ID,
                "multiline": True,
                "max_length": MAX_REASON_CHARS,
            },
        },
    ]
    return {
        "type": "modal",
        "callback_id": EDIT_CALLBACK_ID,
        "private_metadata": encode_modal_context(context),
        "title": plain_text("Approve with changes"),
        "submit": plain_text("Approve"),
        "close": plain_text("Cancel"),
        "blocks": blocks,
    }


def parse_edit_submission(body: Mapping[str, Any]) -> EditSubmission | InvalidSubmission:
    view = mapping_field(body, "view")
    if view.get("callback_id") != EDIT_CALLBACK_ID:
        raise InputError(f"unexpected view callback_id {view.get('callback_id')!r}")
    context = decode_modal_context(text_field(view, "private_metadata"))
    values = mapping_field(mapping_field(view, "state"), "values")
    raw = input_value(values, ARGUMENTS_BLOCK_ID, ARGUMENTS_ACTION_ID)
    reason = input_value(values, REASON_BLOCK_ID, REASON_ACTION_ID)
    errors: dict[str, str] = {}
    arguments = _arguments(raw, errors)
    if not reason:
        errors[REASON_BLOCK_ID] = "Give a reason: it goes into the audit log."
    elif len(reason) > MAX_REASON_CHARS:
        errors[REASON_BLOCK_ID] = f"Keep the reason under {MAX_REASON_CHARS} characters."
    if errors or arguments is None or reason is None:
        return InvalidSubmission(errors=errors)
    return EditSubmission(
        approval_id=context.approval_id,
        channel_id=context.channel_id,
        user_id=text_field(mapping_field(body, "user"), "id"),
        arguments=arguments,
        reason=reason,
        digest=context.digest,
    )


def _arguments(raw: str | None, errors: dict[str, str]) -> dict[str, Any] | None:
    if raw is None:
        errors[ARGUMENTS_BLOCK_ID] = "Give the arguments as a JSON object."
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        errors[ARGUMENTS_BLOCK_ID] = (
            f"Not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
        )
        return None
    if not isinstance(value, dict):
        errors[ARGUMENTS_BLOCK_ID] = "The arguments must be a JSON object ({...})."
        return None
    return value
