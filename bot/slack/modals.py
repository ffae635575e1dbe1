"""What every modal shares: the context it carries, reading what comes back, the reason
input, and a modal that only says something.

A modal a card's button opens carries its context in `private_metadata`
(`action|id|channel`, plus `|digest` once the arguments digest it showed is known):
which approval (or, for an uncertain call, `run_id:execution_key`), which action, the
card's channel (empty for a click in App Home). Modals opened before the digest was
carried have three fields and still submit; their votes count for the current digest.

Reading a submission is pure: a payload that is not what Slack sends raises InputError
naming the field; a person's bad input becomes an `InvalidSubmission` the listener
answers inline (Slack's `response_action: errors`). Each modal (bot.slack.decision_modal,
edit_modal, reconcile_modal) builds and parses its own form with these.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError
from bot.slack.actions import CardAction, card_action
from bot.slack.blocks import Block, mrkdwn_section, plain_text, text_input

REASON_BLOCK_ID = "reason"
REASON_ACTION_ID = "reason_input"
MAX_REASON_CHARS = 2000
REASON_HINT = "Recorded in the audit log with your name. The agent does not see it."

_APPROVAL_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


def check_approval_id(value: str) -> str:
    """`value` when it can be an approval id (or an uncertain call's `run:key`): the one
    check for ids that come back from Slack (button values, modal metadata, /approvals)."""
    if not _APPROVAL_ID.fullmatch(value):
        raise InputError(f"{value[:80]!r} is not an approval id")
    return value


@dataclass(frozen=True, kw_only=True)
class ModalContext:
    """What the modal carries in `private_metadata`: which approval, which action, and
    the arguments digest the modal showed (a vote counts only for that digest)."""

    approval_id: str
    action: CardAction
    channel_id: str | None
    digest: str | None = None


def encode_modal_context(context: ModalContext) -> str:
    fields = [context.action, context.approval_id, context.channel_id or ""]
    return "|".join([*fields, context.digest] if context.digest else fields)


def decode_modal_context(metadata: str) -> ModalContext:
    """The context `encode_modal_context` wrote. Modals opened before the digest was
    carried have three fields; their votes count for the current digest, as they did."""
    action, sep1, rest = metadata.partition("|")
    approval, sep2, rest = rest.partition("|")
    channel_id, _, digest = rest.partition("|")
    word = card_action(action)
    if not sep1 or not sep2 or word is None:
        raise InputError(f"modal private_metadata {metadata[:80]!r} is not ours")
    if digest and not _DIGEST.fullmatch(digest):
        raise InputError(f"modal private_metadata {metadata[:80]!r} has no valid digest")
    return ModalContext(
        approval_id=check_approval_id(approval),
        action=word,
        channel_id=channel_id or None,
        digest=digest or None,
    )


@dataclass(frozen=True, kw_only=True)
class InvalidSubmission:
    """Inline errors for the modal, keyed by block id (Slack's `response_action: errors`)."""

    errors: Mapping[str, str]


def submitted_view(body: Mapping[str, Any], callback_id: str) -> tuple[ModalContext, Any]:
    """The context and the input values of a submission of modal `callback_id`."""
    view = mapping_field(body, "view")
    if view.get("callback_id") != callback_id:
        raise InputError(f"unexpected view callback_id {view.get('callback_id')!r}")
    context = decode_modal_context(text_field(view, "private_metadata"))
    return context, mapping_field(mapping_field(view, "state"), "values")


def submitter(body: Mapping[str, Any]) -> str:
    """The id of the person who submitted (or clicked)."""
    return text_field(mapping_field(body, "user"), "id")


def reason_input(*, hint: str | None = REASON_HINT, optional: bool | None = None) -> Block:
    return text_input(
        REASON_BLOCK_ID,
        REASON_ACTION_ID,
        label="Reason",
        hint=hint,
        max_length=MAX_REASON_CHARS,
        optional=optional,
    )


def call_section(call: str | None, block_id: str) -> Block:
    """The card's call block, repeated in the modal so people see what they decide on."""
    return mrkdwn_section(call or "(the call is shown on the card)", block_id=block_id)


def notice_modal(text: str) -> dict[str, Any]:
    """A modal that only says something: why a click changed nothing, where Slack shows
    the person no ephemeral message (App Home; a channel they are not a member of)."""
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": "Approvals"},
        "close": {"type": "plain_text", "text": "OK"},
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}}],
    }


def modal(
    *, callback_id: str, context: ModalContext, title: str, submit: str, blocks: list[Block]
) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": callback_id,
        "private_metadata": encode_modal_context(context),
        "title": plain_text(title),  # at most 24 characters
        "submit": plain_text(submit),
        "close": plain_text("Cancel"),
        "blocks": blocks,
    }


# -- reading payload fields ------------------------------------------------------------


def mapping_field(body: Mapping[str, Any], key: str, *, required: bool = True) -> Mapping[str, Any]:
    value = body.get(key)
    if isinstance(value, Mapping):
        return value
    if value is None and not required:
        return {}
    raise InputError(f"payload field {key!r} is missing or not an object")


def text_field(body: Mapping[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(f"payload field {key!r} is missing or not a string")
    return value


def optional_text(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    return value if isinstance(value, str) and value else None


def input_value(values: Mapping[str, Any], block_id: str, action_id: str) -> str | None:
    block = values.get(block_id)
    if not isinstance(block, Mapping):
        return None
    element = block.get(action_id)
    if not isinstance(element, Mapping):
        return None
    value = element.get("value")
    return value.strip() if isinstance(value, str) and value.strip() else None
