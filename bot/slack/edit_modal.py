"""The "Approve with changes" modal: build it from the stored (redacted) snapshot, parse
what comes back.

The arguments are shown as pretty JSON in a multiline input
(bot.review.visible.arguments_json: characters that hide or reorder text appear as JSON
escapes such as `\u202e`, so what comes back parses to exactly the same arguments unless
the approver changed them). Redacted values appear as the marker
(bot.credentials.REDACTED); the service keeps the real value wherever the marker is left
in place, so nobody edits a secret blind and none reaches Slack. Syntax errors
(not JSON, not an object) are answered inline here, without I/O; schema errors come from
the service and are answered inline by the listener.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.credentials import REDACTED
from bot.review.snapshot import ReviewSnapshot
from bot.review.visible import arguments_json
from bot.slack.blocks import CALL_BLOCK_ID, text_input
from bot.slack.messages.forms import (
    ARGUMENTS_NOT_AN_OBJECT,
    GIVE_A_REASON,
    GIVE_THE_ARGUMENTS,
    keep_under,
    not_json_text,
)
from bot.slack.modals import (
    MAX_REASON_CHARS,
    REASON_ACTION_ID,
    REASON_BLOCK_ID,
    InvalidSubmission,
    ModalContext,
    call_section,
    input_value,
    modal,
    reason_input,
    submitted_view,
    submitter,
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
    text = arguments_json(snapshot.arguments)
    return text if len(text) <= MAX_ARGUMENTS_CHARS else None


def edit_modal(*, context: ModalContext, call: str | None, arguments: str) -> dict[str, Any]:
    return modal(
        callback_id=EDIT_CALLBACK_ID,
        context=context,
        title="Approve with changes",
        submit="Approve",
        blocks=[
            call_section(call, CALL_BLOCK_ID),
            text_input(
                ARGUMENTS_BLOCK_ID,
                ARGUMENTS_ACTION_ID,
                label="Arguments (JSON)",
                hint=f"Leave {REDACTED} in place to keep a hidden value; replace it to change "
                "it. Approving with changes makes a new digest and earlier approvals no longer "
                "count.",
                max_length=MAX_ARGUMENTS_CHARS,
                initial_value=arguments,
            ),
            reason_input(),
        ],
    )


def parse_edit_submission(body: Mapping[str, Any]) -> EditSubmission | InvalidSubmission:
    context, values = submitted_view(body, EDIT_CALLBACK_ID)
    raw = input_value(values, ARGUMENTS_BLOCK_ID, ARGUMENTS_ACTION_ID)
    reason = input_value(values, REASON_BLOCK_ID, REASON_ACTION_ID)
    errors: dict[str, str] = {}
    arguments = _arguments(raw, errors)
    if not reason:
        errors[REASON_BLOCK_ID] = GIVE_A_REASON
    elif len(reason) > MAX_REASON_CHARS:
        errors[REASON_BLOCK_ID] = keep_under("reason", MAX_REASON_CHARS)
    if errors or arguments is None or reason is None:
        return InvalidSubmission(errors=errors)
    return EditSubmission(
        approval_id=context.approval_id,
        channel_id=context.channel_id,
        user_id=submitter(body),
        arguments=arguments,
        reason=reason,
        digest=context.digest,
    )


def _arguments(raw: str | None, errors: dict[str, str]) -> dict[str, Any] | None:
    if raw is None:
        errors[ARGUMENTS_BLOCK_ID] = GIVE_THE_ARGUMENTS
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        errors[ARGUMENTS_BLOCK_ID] = not_json_text(error.msg, error.lineno, error.colno)
        return None
    if not isinstance(value, dict):
        errors[ARGUMENTS_BLOCK_ID] = ARGUMENTS_NOT_AN_OBJECT
        return None
    return value
