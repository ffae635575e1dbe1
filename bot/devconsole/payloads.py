"""What Slack sends an app, built as Slack builds it (pure functions, no I/O): a slash
command's form, a `block_actions` click, a `view_submission` and `view_closed`, and the
Events API's `message` and `app_home_opened` callbacks. The page only says which button
was pressed and what was typed; the button's value, the view's private metadata and the
ids all come from what the bot itself sent (as in Slack, a person cannot forge them).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from bot.devconsole.state import Message, View
from bot.devconsole.workspace import (
    APP_ID,
    BOT_ID,
    BOT_USER_ID,
    CHANNEL_NAME,
    TEAM_ID,
    TEAM_NAME,
    Person,
)

REQUIRED = "Please complete this required field."
FormState = dict[str, dict[str, dict[str, Any]]]  # block id -> action id -> value


def slash_command(
    person: Person, *, command: str, text: str, channel: str, trigger_id: str, response_url: str
) -> str:
    """The form Slack posts for `/command text` (application/x-www-form-urlencoded)."""
    return urlencode(
        {
            "token": "deprecated",
            "team_id": TEAM_ID,
            "team_domain": TEAM_NAME.replace(" ", "-"),
            "channel_id": channel,
            "channel_name": CHANNEL_NAME,
            "user_id": person.id,
            "user_name": person.name.lower(),
            "command": command,
            "text": text,
            "api_app_id": APP_ID,
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": trigger_id,
        }
    )


def interactive(payload: Mapping[str, Any]) -> str:
    """An interactivity request's body: the payload as JSON in one form field."""
    return urlencode({"payload": json.dumps(payload)})


def _common(person: Person, trigger_id: str) -> dict[str, Any]:
    return {
        "token": "deprecated",
        "api_app_id": APP_ID,
        "team": {"id": TEAM_ID, "domain": TEAM_NAME.replace(" ", "-")},
        "enterprise": None,
        "is_enterprise_install": False,
        "user": {
            "id": person.id,
            "username": person.name.lower(),
            "name": person.name.lower(),
            "team_id": TEAM_ID,
        },
        "trigger_id": trigger_id,
    }


def _action(element: Mapping[str, Any], block_id: str) -> dict[str, Any]:
    action: dict[str, Any] = {
        "type": element.get("type"),
        "action_id": element.get("action_id"),
        "block_id": block_id,
        "action_ts": f"{time.time():.6f}",
    }
    for key in ("text", "value", "style"):
        if key in element:
            action[key] = element[key]
    return action


def message_click(
    person: Person,
    *,
    message: Message,
    element: Mapping[str, Any],
    block_id: str,
    trigger_id: str,
    response_url: str,
) -> dict[str, Any]:
    """`block_actions` for a button pressed on a message (an ephemeral one carries no
    `message`, as in Slack)."""
    payload = {
        "type": "block_actions",
        **_common(person, trigger_id),
        "container": {
            "type": "message",
            "message_ts": message.ts,
            "channel_id": message.channel,
            "is_ephemeral": message.only_for is not None,
        },
        "channel": {"id": message.channel, "name": _channel_name(message.channel)},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [_action(element, block_id)],
    }
    if message.only_for is None:
        payload["message"] = {
            "type": "message",
            "user": message.user,
            "ts": message.ts,
            "text": message.text,
            "blocks": message.blocks,
            **({"thread_ts": message.thread_ts} if message.thread_ts else {}),
        }
    return payload


def _channel_name(channel: str) -> str:
    """The name Slack gives a conversation in payloads: a DM's is "directmessage"."""
    return "directmessage" if channel.startswith("D") else CHANNEL_NAME


def view_json(view: View, *, values: FormState | None = None) -> dict[str, Any]:
    """A view as Slack describes it in payloads: the app's definition, ids, state."""
    return {
        **view.definition,
        "id": view.id,
        "hash": view.hash,
        "team_id": TEAM_ID,
        "app_id": APP_ID,
        "bot_id": BOT_ID,
        "state": {"values": values or {}},
    }


def view_click(
    person: Person,
    *,
    view: View,
    element: Mapping[str, Any],
    block_id: str,
    trigger_id: str,
    values: FormState,
) -> dict[str, Any]:
    """`block_actions` for a button pressed in a modal or in App Home."""
    return {
        "type": "block_actions",
        **_common(person, trigger_id),
        "container": {"type": "view", "view_id": view.id},
        "view": view_json(view, values=values),
        "actions": [_action(element, block_id)],
    }


def view_submission(
    person: Person, *, view: View, trigger_id: str, values: FormState
) -> dict[str, Any]:
    return {
        "type": "view_submission",
        **_common(person, trigger_id),
        "view": view_json(view, values=values),
        "response_urls": [],
    }


def view_closed(person: Person, *, view: View) -> dict[str, Any]:
    payload = {"type": "view_closed", **_common(person, ""), "view": view_json(view)}
    payload.pop("trigger_id")
    payload["is_cleared"] = False
    return payload


def event_callback(event: Mapping[str, Any], *, event_id: str) -> str:
    """An Events API delivery (application/json)."""
    return json.dumps(
        {
            "token": "deprecated",
            "team_id": TEAM_ID,
            "api_app_id": APP_ID,
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(time.time()),
            "event": dict(event),
            "authorizations": [
                {"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True, "enterprise_id": None}
            ],
            "is_ext_shared_channel": False,
        }
    )


def message_event(message: Message) -> dict[str, Any]:
    event = {
        "type": "message",
        "channel": message.channel,
        "channel_type": "channel",
        "user": message.user,
        "text": message.text,
        "ts": message.ts,
        "event_ts": message.ts,
        "team": TEAM_ID,
    }
    if message.thread_ts:
        event["thread_ts"] = message.thread_ts
    return event


def home_opened_event(person: Person, *, home: View | None, event_ts: str) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "app_home_opened",
        "user": person.id,
        "channel": "D0" + person.id[1:],
        "tab": "home",
        "event_ts": event_ts,
    }
    if home is not None:
        event["view"] = view_json(home)
    return event


def form_state(
    definition: Mapping[str, Any], typed: Mapping[str, Any], *, submitting: bool
) -> tuple[FormState, dict[str, str]]:
    """The view's `state.values` from what the page says was typed or chosen, and, when
    `submitting`, the field errors Slack's client shows before it sends anything (a
    required field left empty, a text too short or too long)."""
    values: FormState = {}
    errors: dict[str, str] = {}
    for block in definition.get("blocks") or []:
        if not isinstance(block, Mapping) or block.get("type") != "input":
            continue
        element = block.get("element")
        if not isinstance(element, Mapping):
            continue
        block_id, action_id = str(block.get("block_id")), str(element.get("action_id"))
        raw = (typed.get(block_id) or {}).get(action_id) if isinstance(typed, Mapping) else None
        state, empty = _element_state(element, raw)
        if state is None:
            continue
        values[block_id] = {action_id: state}
        problem = _field_problem(element, raw) if not empty else None
        if empty and not block.get("optional"):
            problem = REQUIRED
        if submitting and problem is not None:
            errors[block_id] = problem
    return values, errors


def _element_state(element: Mapping[str, Any], raw: Any) -> tuple[dict[str, Any] | None, bool]:
    kind = element.get("type")
    options = [o for o in element.get("options") or [] if isinstance(o, Mapping)]
    if kind == "plain_text_input":
        text = raw if isinstance(raw, str) and raw != "" else None
        return {"type": kind, "value": text}, text is None
    chosen = raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []
    picked = [option for option in options if option.get("value") in chosen]
    if kind == "checkboxes":
        return {"type": kind, "selected_options": picked}, not picked
    if kind in ("radio_buttons", "static_select"):
        return {"type": kind, "selected_option": picked[0] if picked else None}, not picked
    return None, True


def _field_problem(element: Mapping[str, Any], raw: Any) -> str | None:
    if element.get("type") != "plain_text_input" or not isinstance(raw, str):
        return None
    low, high = element.get("min_length"), element.get("max_length")
    if isinstance(low, int) and len(raw) < low:
        return f"Must be at least {low} characters."
    if isinstance(high, int) and len(raw) > high:
        return f"Must be {high} characters or fewer."
    return None
