"""The reason modal behind Approve, Reject and Revoke: build it, parse what comes back.

It repeats the card's call block (tool, redacted arguments, digest) so the person sees
what they decide on, asks for a reason (audit only; the agent never sees it) and, on
reject, for an optional message to the agent (what the model is told instead of the
tool's result). Its `private_metadata` carries the arguments digest it showed: the vote
counts only for that digest (bot.slack.modals).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.errors import InputError
from bot.policy.durations import format_duration
from bot.service.api import WindowOffer
from bot.slack.actions import ACTIONS
from bot.slack.blocks import CALL_BLOCK_ID, Block, text_input
from bot.slack.messages.forms import GIVE_A_REASON, keep_under
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

DECISION_CALLBACK_ID = "approval_decision"
STANDING_BLOCK_ID = "standing"
STANDING_ACTION_ID = "standing_input"
STANDING_VALUE = "rest_of_run"
WINDOW_BLOCK_ID = "window"
WINDOW_ACTION_ID = "window_input"
WINDOW_VALUE = "open_window"
MESSAGE_BLOCK_ID = "message_to_agent"
MESSAGE_ACTION_ID = "message_input"
MAX_MESSAGE_CHARS = 2000

DecisionAction = Literal["approve", "reject", "revoke"]
"""What the reason modal submits."""


@dataclass(frozen=True, kw_only=True)
class DecisionSubmission:
    approval_id: str
    action: DecisionAction
    channel_id: str | None
    user_id: str
    reason: str
    message: str | None
    digest: str | None = None  # the arguments digest the modal showed
    always: bool = False  # the decision stands for the rest of the run
    window: bool = False  # the approval opens an approval window


def decision_modal(
    *,
    context: ModalContext,
    call: str | None,
    tool_name: str | None = None,
    window: tuple[str, WindowOffer] | None = None,
) -> dict[str, Any]:
    """The reason modal. `call` is the card's own (escaped, redacted) call block: tool,
    arguments and digest, so the person sees what they decide on. With `tool_name` (the
    policy lets a decision on it stand for the run), approve and reject offer "for the
    rest of this run"; with `window` (the tool and the window the policy lets an approval
    open), approve offers the approval window."""
    verb = ACTIONS[context.action].label
    blocks: list[Block] = [call_section(call, CALL_BLOCK_ID), reason_input(optional=False)]
    if tool_name is not None and context.action in ("approve", "reject"):
        blocks.append(_standing_choice(verb, tool_name))
    if window is not None and context.action == "approve":
        blocks.append(_window_choice(*window))
    if context.action == "reject":
        blocks.append(
            text_input(
                MESSAGE_BLOCK_ID,
                MESSAGE_ACTION_ID,
                label="Message to the agent",
                hint="What the model is told instead of the tool's result.",
                max_length=MAX_MESSAGE_CHARS,
                optional=True,
            )
        )
    return modal(
        callback_id=DECISION_CALLBACK_ID,
        context=context,
        title=f"{verb} tool call",
        submit=verb,
        blocks=blocks,
    )


def _standing_choice(verb: str, tool_name: str) -> Block:
    text = f"{verb} every later {tool_name[:100]} call of this run too"
    option = {
        "text": {"type": "plain_text", "text": text[:75]},
        "description": {
            "type": "mrkdwn",
            "text": "Each call still gets its own card and checks. Revoke this approval to stop.",
        },
        "value": STANDING_VALUE,
    }
    return {
        "type": "input",
        "block_id": STANDING_BLOCK_ID,
        "optional": True,
        "label": {"type": "plain_text", "text": "For the rest of the run"},
        "element": {"type": "checkboxes", "action_id": STANDING_ACTION_ID, "options": [option]},
    }


def _window_choice(tool_name: str, offer: WindowOffer) -> Block:
    lasts = format_duration(offer.lasts)
    text = f"Approve matching {tool_name[:40]} calls for {lasts}"
    fields = ", ".join(offer.match_fields)
    matching = f"the same {fields[:300]}" if offer.match_fields else "any arguments"
    option = {
        "text": {"type": "plain_text", "text": text[:75]},
        "description": {"type": "plain_text", "text": f"Later calls with {matching}"[:75]},
        "value": WINDOW_VALUE,
    }
    return {
        "type": "input",
        "block_id": WINDOW_BLOCK_ID,
        "optional": True,
        "label": {"type": "plain_text", "text": f"Approval window ({lasts})"},
        "element": {"type": "checkboxes", "action_id": WINDOW_ACTION_ID, "options": [option]},
        "hint": {
            "type": "plain_text",
            "text": f"Later {tool_name[:100]} calls with {matching}, in any run, are approved "
            "in your name until it ends. Each still gets its own card and checks; a call too "
            "long for its card, or needing more approvals, is asked as usual. End it from "
            "App Home.",
        },
    }


def _chose_standing(values: Mapping[str, Any]) -> bool:
    return _ticked(values, STANDING_BLOCK_ID, STANDING_ACTION_ID, STANDING_VALUE)


def _ticked(values: Mapping[str, Any], block_id: str, action_id: str, value: str) -> bool:
    block = values.get(block_id)
    element = block.get(action_id) if isinstance(block, Mapping) else None
    selected = element.get("selected_options") if isinstance(element, Mapping) else None
    if not isinstance(selected, list):
        return False
    return any(isinstance(o, Mapping) and o.get("value") == value for o in selected)


def reason_and_message(
    values: Mapping[str, Any],
) -> tuple[str, str | None] | InvalidSubmission:
    """A decision form's reason (required, bounded) and message to the agent (optional,
    bounded), or what the person must fix, each under its own block."""
    reason = input_value(values, REASON_BLOCK_ID, REASON_ACTION_ID)
    message = input_value(values, MESSAGE_BLOCK_ID, MESSAGE_ACTION_ID)
    errors: dict[str, str] = {}
    if not reason:
        errors[REASON_BLOCK_ID] = GIVE_A_REASON
    elif len(reason) > MAX_REASON_CHARS:
        errors[REASON_BLOCK_ID] = keep_under("reason", MAX_REASON_CHARS)
    if message is not None and len(message) > MAX_MESSAGE_CHARS:
        errors[MESSAGE_BLOCK_ID] = keep_under("message", MAX_MESSAGE_CHARS)
    if errors or reason is None:
        return InvalidSubmission(errors=errors)
    return reason, message


def parse_decision_submission(body: Mapping[str, Any]) -> DecisionSubmission | InvalidSubmission:
    context, values = submitted_view(body, DECISION_CALLBACK_ID)
    action = context.action
    if action not in ("approve", "reject", "revoke"):
        raise InputError(f"the reason modal does not {action!r}")
    given = reason_and_message(values)
    if isinstance(given, InvalidSubmission):
        return given
    reason, message = given
    return DecisionSubmission(
        approval_id=context.approval_id,
        action=action,
        channel_id=context.channel_id,
        user_id=submitter(body),
        reason=reason,
        message=message if action == "reject" and message else None,
        digest=context.digest,
        always=action != "revoke" and _chose_standing(values),
        window=action == "approve"
        and _ticked(values, WINDOW_BLOCK_ID, WINDOW_ACTION_ID, WINDOW_VALUE),
    )
