"""Bulk decisions in Slack, App Home's part: where several pending calls of one tool are
selected ("Decide several at once"), and the button press that sends the selection. The
modal that shows each selected call whole and takes the one reason, and the summary, are
bot.slack.bulk_modal.

Block Kit bounds every part: App Home holds at most 100 blocks (the part takes only the
room the rest of Home leaves), a checkboxes element at most 10 options (a tool's calls
are spread over several, each in an input block, whose ticks Slack sends with a button
press in the view's state and which send nothing themselves), an option's text and
description at most 75 characters (a call's redacted arguments on one line, cut with a
visible mark; its id and wait), a modal's `private_metadata` at most 3000 characters
(the selected calls' ids and the digest each was shown with: a selection that would not
fit is cut, and what was cut is said).

Parsing is pure: a payload that is not what Slack sends raises InputError naming the
field; bad input in the modal is an `InvalidSubmission` answered inline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot.errors import InputError
from bot.review.snapshot import ReviewSnapshot
from bot.review.visible import arguments_json
from bot.service import ApprovalView
from bot.service.bulk import BULK_LIMIT
from bot.service.waiting import elapsed_text
from bot.slack.blocks import (
    Block,
    escape,
    mrkdwn_context,
    mrkdwn_section,
    plain_text,
)
from bot.slack.modals import (
    check_approval_id,
    mapping_field,
    submitter,
    text_field,
)
from store.records import ApprovalRecord

BulkAction = Literal["approve", "reject"]

BULK_APPROVE_ACTION_ID = "bulk_approve"
BULK_REJECT_ACTION_ID = "bulk_reject"
BULK_SELECT_ACTION_PREFIX = "bulk_select_"  # one per checkboxes element: _0, _1, _2
BULK_BLOCK_PREFIX = "bulk:"  # one tool's buttons: bulk:0 ...; its checkboxes: bulk:0:0 ...
BULK_HEADER = "Decide several at once"
OPTIONS_PER_CHECKBOXES = 10  # Block Kit
OPTION_TEXT_LIMIT = 75  # Block Kit: an option's text and description
MIN_CALLS = 2  # a tool with fewer waiting calls is decided from its own item
VERBS: Mapping[BulkAction, str] = {"approve": "Approve", "reject": "Reject"}
_INTRO = (
    "Tick calls of one tool, then approve or reject them with one reason. Each call is "
    "shown whole before you confirm, checked as if decided alone and recorded on its own."
)


# -- App Home: the selection -------------------------------------------------------------


def bulk_home_blocks(pending: Sequence[ApprovalView], *, room: int) -> list[Block]:
    """The "Decide several at once" part for the calls `pending` holds (the viewer may
    decide each), in at most `room` blocks: per tool with MIN_CALLS or more, its oldest
    BULK_LIMIT calls as checkboxes (input blocks of at most 10, whose ticks Slack keeps
    in the Home view's state) and the two buttons. Empty when no tool has enough calls
    or there is no room for one."""
    blocks: list[Block] = []
    for index, (tool_name, views) in enumerate(_by_tool(pending).items()):
        head = [] if blocks else [{"type": "divider"}, _header(BULK_HEADER), mrkdwn_context(_INTRO)]
        group = _group_blocks(index, tool_name, views)
        if len(blocks) + len(head) + len(group) > room:
            break
        blocks += [*head, *group]
    return blocks


def _by_tool(pending: Sequence[ApprovalView]) -> dict[str, list[ApprovalView]]:
    groups: dict[str, list[ApprovalView]] = {}
    for view in pending:
        if view.can_decide and view.approval.status == "pending":
            groups.setdefault(view.approval.tool_name, []).append(view)
    return {tool: views for tool, views in groups.items() if len(views) >= MIN_CALLS}


def _group_section(tool_name: str, views: Sequence[ApprovalView]) -> Block:
    more = f" (the oldest {BULK_LIMIT} below)" if len(views) > BULK_LIMIT else ""
    return mrkdwn_section(f"*`{escape(tool_name, 200)}`*: {len(views)} calls wait for you{more}")


def _group_blocks(index: int, tool_name: str, views: Sequence[ApprovalView]) -> list[Block]:
    shown = list(views[:BULK_LIMIT])
    block_id = f"{BULK_BLOCK_PREFIX}{index}"
    blocks = [_group_section(tool_name, views)]
    for number, start in enumerate(range(0, len(shown), OPTIONS_PER_CHECKBOXES)):
        chunk = shown[start : start + OPTIONS_PER_CHECKBOXES]
        blocks.append(
            {
                "type": "input",
                "block_id": f"{block_id}:{number}",
                "optional": True,
                "label": plain_text(f"Calls {start + 1}-{start + len(chunk)}"),
                "element": {
                    "type": "checkboxes",
                    "action_id": f"{BULK_SELECT_ACTION_PREFIX}{number}",
                    "options": [_option(view) for view in chunk],
                },
            }
        )
    buttons: tuple[tuple[BulkAction, str, str], ...] = (
        ("approve", BULK_APPROVE_ACTION_ID, "primary"),
        ("reject", BULK_REJECT_ACTION_ID, "danger"),
    )
    elements = [
        {
            "type": "button",
            "text": plain_text(f"{VERBS[action]} selected…"),
            "action_id": action_id,
            "style": style,
            "value": tool_name[:2000],
        }
        for action, action_id, style in buttons
    ]
    blocks.append({"type": "actions", "block_id": block_id, "elements": elements})
    return blocks


def _option(view: ApprovalView) -> dict[str, Any]:
    approval = view.approval
    about = f"{approval.approval_id} · waiting {elapsed_text(view.waited_seconds)}"
    return {
        "text": plain_text(_clip(arguments_line(approval), OPTION_TEXT_LIMIT)),
        "description": plain_text(_clip(about, OPTION_TEXT_LIMIT)),
        "value": approval.approval_id,
    }


def arguments_line(approval: ApprovalRecord) -> str:
    """The call's redacted arguments on one line (hiding characters made visible), as
    the snapshot people are shown holds them; never the raw arguments."""
    try:
        snapshot = ReviewSnapshot.from_json(approval.snapshot)
    except InputError:
        return "(snapshot unreadable)"
    return arguments_json(snapshot.arguments, indent=None)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": text}}


# -- the click in App Home -------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BulkClick:
    """ "Approve selected…" or "Reject selected…" pressed in App Home: who, which tool's
    group, which calls were ticked in it."""

    user_id: str
    trigger_id: str
    action: BulkAction
    tool_name: str
    selected: tuple[str, ...]


def parse_bulk_click(body: Mapping[str, Any]) -> BulkClick:
    """The click, with the ids ticked in the clicked group's checkboxes (view.state)."""
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], Mapping):
        raise InputError("payload field 'actions' is missing or empty")
    pressed = actions[0]
    action: BulkAction = (
        "approve" if pressed.get("action_id") == BULK_APPROVE_ACTION_ID else "reject"
    )
    block_id = text_field(pressed, "block_id")
    tool_name = text_field(pressed, "value")
    values = mapping_field(mapping_field(mapping_field(body, "view"), "state"), "values")
    selected: list[str] = []
    for key, inputs in values.items():
        if not (str(key).startswith(f"{block_id}:") and isinstance(inputs, Mapping)):
            continue  # another tool's group, or not a bulk selection
        for value in _ticked(inputs):
            if value not in selected:
                selected.append(check_approval_id(value))
    return BulkClick(
        user_id=submitter(body),
        trigger_id=text_field(body, "trigger_id"),
        action=action,
        tool_name=tool_name,
        selected=tuple(selected),
    )


def _ticked(inputs: Mapping[str, Any]) -> list[str]:
    """The values of the options ticked in one input block's checkboxes."""
    ticked: list[str] = []
    for element in inputs.values():
        options = element.get("selected_options") if isinstance(element, Mapping) else None
        for option in options if isinstance(options, list) else ():
            value = option.get("value") if isinstance(option, Mapping) else None
            if isinstance(value, str):
                ticked.append(value)
    return ticked
