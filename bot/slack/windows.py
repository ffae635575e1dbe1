"""Approval windows in App Home: the open windows the viewer may end (those they opened;
every one for an admin), each with an End button behind Slack's confirmation dialog
(the click is handled by bot.slack.home.HomeListeners)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.errors import InputError
from bot.slack.blocks import Block, escape, mrkdwn_context, person, slack_date
from bot.slack.modals import mapping_field, text_field
from store.records import ApprovalWindow

END_WINDOW_ACTION_ID = "window_end"
HOME_WINDOWS_LIMIT = 10  # one block each
ENDED_FROM_HOME = "ended from App Home"
MAX_WINDOW_ID_CHARS = 100


def window_blocks(windows: Sequence[ApprovalWindow]) -> list[Block]:
    """App Home's section of open approval windows (nothing when there are none)."""
    if not windows:
        return []
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Your approval windows"}}
    ]
    blocks += [_window_item(window) for window in windows[:HOME_WINDOWS_LIMIT]]
    if len(windows) > HOME_WINDOWS_LIMIT:
        blocks.append(mrkdwn_context("More are open; end them by revoking their approvals."))
    return blocks


def _window_item(window: ApprovalWindow) -> Block:
    matching = (
        f" with the same {', '.join(escape(f, 100) for f in window.match_fields[:10])}"
        if window.match_fields
        else ""
    )
    text = (
        f"`{escape(window.tool_name, 200)}` calls{matching}, approved in "
        f"{person(window.decider)}'s name until {slack_date(window.expires_at)} "
        f"(`{escape(window.window_id, 100)}`)"
    )
    return {
        "type": "section",
        "text": {"type": "mrkdwn", "text": text[:3000]},
        "accessory": {
            "type": "button",
            "text": {"type": "plain_text", "text": "End window"},
            "style": "danger",
            "action_id": END_WINDOW_ACTION_ID,
            "value": window.window_id,
            "confirm": {
                "title": {"type": "plain_text", "text": "End this window?"},
                "text": {
                    "type": "plain_text",
                    "text": "Calls asked from now on are not approved by it. Calls it "
                    "already approved keep their approval.",
                },
                "confirm": {"type": "plain_text", "text": "End it"},
                "deny": {"type": "plain_text", "text": "Keep it"},
            },
        },
    }


def parse_end_click(body: Mapping[str, Any]) -> tuple[str, str]:
    """(user id, window id) of an End window click; InputError for anything else."""
    user = text_field(mapping_field(body, "user"), "id")
    actions = body.get("actions")
    if not isinstance(actions, list) or len(actions) != 1 or not isinstance(actions[0], Mapping):
        raise InputError("an End window click carries one action")
    window_id = text_field(actions[0], "value")
    if len(window_id) > MAX_WINDOW_ID_CHARS:
        raise InputError("the window id is too long")
    return user, window_id
