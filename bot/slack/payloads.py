"""Pure parsing of the Slack payloads the bot handles into small frozen dataclasses.

Nothing here talks to Slack, the service or the clock: listeners call these functions
and act on the result. A payload that is not what Slack sends raises InputError naming
the missing or malformed field; a person's bad input becomes a value the listener can
answer (a help text, inline validation errors).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.errors import InputError

APPROVE_ACTION_ID = "approval_approve"
REJECT_ACTION_ID = "approval_reject"
EDIT_ACTION_ID = "approval_edit"
REVOKE_ACTION_ID = "approval_revoke"
RECORD_RESULT_ACTION_ID = "uncertain_record_result"
RETRY_ACTION_ID = "uncertain_retry"
ABORT_ACTION_ID = "uncertain_abort"
DECISION_CALLBACK_ID = "approval_decision"
REASON_BLOCK_ID = "reason"
REASON_ACTION_ID = "reason_input"
MESSAGE_BLOCK_ID = "message_to_agent"
MESSAGE_ACTION_ID = "message_input"
CALL_BLOCK_ID = "call"

MAX_REASON_CHARS = 2000
MAX_MESSAGE_CHARS = 2000
_AGENT_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_APPROVAL_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")
_DIGEST = re.compile(r"[0-9a-f]{64}")

DecisionAction = Literal["approve", "reject", "revoke"]
"""What the reason modal (callback DECISION_CALLBACK_ID) submits."""
CardAction = Literal["approve", "reject", "edit", "revoke", "result", "retry", "abort"]
"""What a button on a card asks for; the modal it opens carries the same word."""

CARD_ACTIONS: Mapping[str, CardAction] = {
    APPROVE_ACTION_ID: "approve",
    REJECT_ACTION_ID: "reject",
    EDIT_ACTION_ID: "edit",
    REVOKE_ACTION_ID: "revoke",
    RECORD_RESULT_ACTION_ID: "result",
    RETRY_ACTION_ID: "retry",
    ABORT_ACTION_ID: "abort",
}


# -- slash commands -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SlashCommand:
    command: str
    text: str
    user_id: str
    channel_id: str
    trigger_id: str | None
    response_url: str | None  # answers here reach the person even where the bot is no member


@dataclass(frozen=True, kw_only=True)
class AgentTask:
    """`/agent [@name | agent=name] <task>`; `agent_name` None means the default agent."""

    agent_name: str | None
    task: str


@dataclass(frozen=True, kw_only=True)
class AgentHelp:
    pass


AgentCommand = AgentTask | AgentHelp


def parse_slash_command(body: Mapping[str, Any]) -> SlashCommand:
    return SlashCommand(
        command=text_field(body, "command"),
        text=str(body.get("text") or "").strip(),
        user_id=text_field(body, "user_id"),
        channel_id=text_field(body, "channel_id"),
        trigger_id=_optional_text(body, "trigger_id"),
        response_url=_optional_text(body, "response_url"),
    )


def parse_agent_command(text: str) -> AgentCommand:
    """`help` or nothing -> AgentHelp; `@ops task` / `agent=ops task` pick an agent."""
    text = text.strip()
    if text.lower() in ("", "help"):
        return AgentHelp()
    head, _, rest = text.partition(" ")
    agent_name: str | None = None
    if head.startswith("@") and not head.startswith("@<"):
        agent_name = head[1:]
    elif head.lower().startswith("agent="):
        agent_name = head[len("agent=") :]
    if agent_name is None:
        return AgentTask(agent_name=None, task=text)
    if not _AGENT_NAME.fullmatch(agent_name):
        raise InputError(
            f"{agent_name!r} is not an agent name (letters, digits, '.', '_' or '-', up to 64)"
        )
    task = rest.strip()
    if not task:
        raise InputError(f"tell agent {agent_name!r} what to do: /agent @{agent_name} <task>")
    return AgentTask(agent_name=agent_name, task=task)


# -- interactivity ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ButtonClick:
    """A button pressed on a review card (or an uncertain call's card). The button's value
    is the approval id; `call_text` is the card's own rendering of the call, reused in the
    modal."""

    action: CardAction
    approval_id: str
    user_id: str
    channel_id: str | None
    message_ts: str | None
    trigger_id: str
    call_text: str | None


@dataclass(frozen=True, kw_only=True)
class ModalContext:
    """What the modal carries in `private_metadata`: which approval, which action, and
    the arguments digest the modal showed (a vote counts only for that digest)."""

    approval_id: str
    action: CardAction
    channel_id: str | None
    digest: str | None = None


@dataclass(frozen=True, kw_only=True)
class DecisionSubmission:
    approval_id: str
    action: DecisionAction
    channel_id: str | None
    user_id: str
    reason: str
    message: str | None
    digest: str | None = None  # the arguments digest the modal showed


@dataclass(frozen=True, kw_only=True)
class InvalidSubmission:
    """Inline errors for the modal, keyed by block id (Slack's `response_action: errors`)."""

    errors: Mapping[str, str]


def parse_button_click(body: Mapping[str, Any]) -> ButtonClick:
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], Mapping):
        raise InputError("block_actions payload has no actions")
    action = actions[0]
    action_id = text_field(action, "action_id")
    card_action = CARD_ACTIONS.get(action_id)
    if card_action is None:
        raise InputError(f"unexpected action_id {action_id!r}")
    container = mapping_field(body, "container", required=False)
    channel = mapping_field(body, "channel", required=False)
    message = mapping_field(body, "message", required=False)
    return ButtonClick(
        action=card_action,
        approval_id=_approval_id(text_field(action, "value")),
        user_id=text_field(mapping_field(body, "user"), "id"),
        channel_id=_optional_text(channel, "id") or _optional_text(container, "channel_id"),
        message_ts=_optional_text(container, "message_ts") or _optional_text(message, "ts"),
        trigger_id=text_field(body, "trigger_id"),
        call_text=_block_text(message, CALL_BLOCK_ID),
    )


_CARD_ACTION_WORDS: Mapping[str, CardAction] = {word: word for word in CARD_ACTIONS.values()}


def encode_modal_context(context: ModalContext) -> str:
    fields = [context.action, context.approval_id, context.channel_id or ""]
    return "|".join([*fields, context.digest] if context.digest else fields)


def decode_modal_context(metadata: str) -> ModalContext:
    """The context `encode_modal_context` wrote. Modals opened before the digest was
    carried have three fields; their votes count for the current digest, as they did."""
    action, sep1, rest = metadata.partition("|")
    approval_id, sep2, rest = rest.partition("|")
    channel_id, _, digest = rest.partition("|")
    card_action = _CARD_ACTION_WORDS.get(action)
    if not sep1 or not sep2 or card_action is None:
        raise InputError(f"modal private_metadata {metadata[:80]!r} is not ours")
    if digest and not _DIGEST.fullmatch(digest):
        raise InputError(f"modal private_metadata {metadata[:80]!r} has no valid digest")
    return ModalContext(
        approval_id=_approval_id(approval_id),
        action=card_action,
        channel_id=channel_id or None,
        digest=digest or None,
    )


def parse_decision_submission(body: Mapping[str, Any]) -> DecisionSubmission | InvalidSubmission:
    view = mapping_field(body, "view")
    if view.get("callback_id") != DECISION_CALLBACK_ID:
        raise InputError(f"unexpected view callback_id {view.get('callback_id')!r}")
    context = decode_modal_context(text_field(view, "private_metadata"))
    action = context.action
    if action not in ("approve", "reject", "revoke"):
        raise InputError(f"the reason modal does not {action!r}")
    values = mapping_field(mapping_field(view, "state"), "values")
    reason = input_value(values, REASON_BLOCK_ID, REASON_ACTION_ID)
    message = input_value(values, MESSAGE_BLOCK_ID, MESSAGE_ACTION_ID)
    errors: dict[str, str] = {}
    if not reason:
        errors[REASON_BLOCK_ID] = "Give a reason: it goes into the audit log."
    elif len(reason) > MAX_REASON_CHARS:
        errors[REASON_BLOCK_ID] = f"Keep the reason under {MAX_REASON_CHARS} characters."
    if message is not None and len(message) > MAX_MESSAGE_CHARS:
        errors[MESSAGE_BLOCK_ID] = f"Keep the message under {MAX_MESSAGE_CHARS} characters."
    if errors or reason is None:
        return InvalidSubmission(errors=errors)
    return DecisionSubmission(
        approval_id=context.approval_id,
        action=action,
        channel_id=context.channel_id,
        user_id=text_field(mapping_field(body, "user"), "id"),
        reason=reason,
        message=message if context.action == "reject" and message else None,
        digest=context.digest,
    )


# -- events -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ThreadReply:
    """A person's message inside a thread: possible follow-up input for a run."""

    channel_id: str
    thread_ts: str
    user_id: str
    text: str
    ts: str


def parse_thread_reply(event: Mapping[str, Any], *, bot_user_id: str | None) -> ThreadReply | None:
    """A human reply in a thread, or None for everything the bot ignores: bot
    messages, edits and other subtypes, its own messages, thread roots, top-level posts,
    and events without the fields a reply needs (answering those with an error would
    only make Slack redeliver them)."""
    if event.get("type") != "message" or event.get("subtype") or event.get("bot_id"):
        return None
    channel_id = _optional_text(event, "channel")
    user_id = _optional_text(event, "user")
    thread_ts = _optional_text(event, "thread_ts")
    ts = _optional_text(event, "ts")
    if channel_id is None or user_id is None or thread_ts is None or ts is None:
        return None
    if ts == thread_ts:
        return None
    if bot_user_id is not None and user_id == bot_user_id:
        return None
    text = str(event.get("text") or "").strip()
    if not text:
        return None
    return ThreadReply(
        channel_id=channel_id,
        thread_ts=thread_ts,
        user_id=user_id,
        text=text,
        ts=ts,
    )


# -- helpers ------------------------------------------------------------------------


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


def _optional_text(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    return value if isinstance(value, str) and value else None


def _approval_id(value: str) -> str:
    if not _APPROVAL_ID.fullmatch(value):
        raise InputError(f"{value[:80]!r} is not an approval id")
    return value


def input_value(values: Mapping[str, Any], block_id: str, action_id: str) -> str | None:
    block = values.get(block_id)
    if not isinstance(block, Mapping):
        return None
    element = block.get(action_id)
    if not isinstance(element, Mapping):
        return None
    value = element.get("value")
    return value.strip() if isinstance(value, str) and value.strip() else None


def _block_text(message: Mapping[str, Any], block_id: str) -> str | None:
    blocks = message.get("blocks")
    if not isinstance(blocks, list):
        return None
    for block in blocks:
        if isinstance(block, Mapping) and block.get("block_id") == block_id:
            text = block.get("text")
            if isinstance(text, Mapping) and isinstance(text.get("text"), str):
                return str(text["text"])
    return None
