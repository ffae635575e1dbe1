"""Bulk decisions in Slack, what people see and what comes back: the App Home part where
several pending calls of one tool are selected ("Decide several at once"), the modal
that shows each selected call whole and takes the one reason, and the summary of what
was decided and what was not (and why).

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

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot.errors import ApprovalsError, InputError
from bot.review.snapshot import ReviewSnapshot
from bot.review.visible import arguments_json
from bot.service import ApprovalView
from bot.service.bulk import BULK_LIMIT, BulkItem, BulkRefusal
from bot.service.waiting import elapsed_text
from bot.slack.blocks import (
    SECTION_TEXT_LIMIT,
    Block,
    escape,
    escape_join,
    mrkdwn_context,
    mrkdwn_section,
    plain_text,
    snapshot_text,
    text_input,
)
from bot.slack.decision_modal import MAX_MESSAGE_CHARS, MESSAGE_ACTION_ID, MESSAGE_BLOCK_ID
from bot.slack.messages.forms import GIVE_A_REASON, keep_under
from bot.slack.messages.replies import refused_text
from bot.slack.modals import (
    MAX_REASON_CHARS,
    REASON_ACTION_ID,
    REASON_BLOCK_ID,
    InvalidSubmission,
    check_approval_id,
    input_value,
    mapping_field,
    reason_input,
    submitter,
    text_field,
)
from store.records import ApprovalRecord

BulkAction = Literal["approve", "reject"]

BULK_APPROVE_ACTION_ID = "bulk_approve"
BULK_REJECT_ACTION_ID = "bulk_reject"
BULK_SELECT_ACTION_PREFIX = "bulk_select_"  # one per checkboxes element: _0, _1, _2
BULK_BLOCK_PREFIX = "bulk:"  # one tool's buttons: bulk:0 ...; its checkboxes: bulk:0:0 ...
BULK_CALLBACK_ID = "bulk_decision"
BULK_HEADER = "Decide several at once"
OPTIONS_PER_CHECKBOXES = 10  # Block Kit
OPTION_TEXT_LIMIT = 75  # Block Kit: an option's text and description
PRIVATE_METADATA_LIMIT = 3000  # Block Kit
MIN_CALLS = 2  # a tool with fewer waiting calls is decided from its own item
_VERBS: Mapping[BulkAction, str] = {"approve": "Approve", "reject": "Reject"}
_DONE: Mapping[BulkAction, str] = {"approve": "approved", "reject": "rejected"}
_DIGEST = re.compile(r"[0-9a-f]{64}")
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
            "text": plain_text(f"{_VERBS[action]} selected…"),
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


# -- the modal: every selected call whole, one reason ---------------------------------


@dataclass(frozen=True, kw_only=True)
class LeftOut:
    """A selected call the modal does not include, and why (for the person)."""

    approval_id: str
    why: str


def bulk_modal(
    *,
    action: BulkAction,
    tool_name: str,
    views: Sequence[ApprovalView],
    left_out: Sequence[LeftOut],
) -> dict[str, Any]:
    """The confirmation: each call as its card shows it (tool, redacted arguments,
    digest), what was left out of the selection and why, the reason (and on reject the
    message to the agent). The metadata binds each vote to the digest shown."""
    included = list(views)
    dropped = list(left_out)
    metadata = encode_bulk_context(action, tool_name, included)
    while len(metadata) > PRIVATE_METADATA_LIMIT and len(included) > 1:
        cut = included.pop()
        dropped.append(LeftOut(approval_id=cut.approval.approval_id, why=TOO_MANY_TEXT))
        metadata = encode_bulk_context(action, tool_name, included)
    verb = _VERBS[action]
    count = len(included)
    blocks: list[Block] = [
        mrkdwn_section(
            f"*{verb} {count} call{'s' if count != 1 else ''} of `{escape(tool_name, 200)}`* "
            "with one reason. Each is checked as if decided alone and recorded on its own; "
            "a call that fails a check is left undecided and you are told why."
        )
    ]
    blocks += [mrkdwn_section(_call_text(view)) for view in included]
    if dropped:
        blocks.append(mrkdwn_section(left_out_text(dropped)))
    blocks.append(reason_input())
    if action == "reject":
        blocks.append(
            text_input(
                MESSAGE_BLOCK_ID,
                MESSAGE_ACTION_ID,
                label="Message to the agent",
                hint="What the model is told instead of each tool's result.",
                max_length=MAX_MESSAGE_CHARS,
                optional=True,
            )
        )
    return {
        "type": "modal",
        "callback_id": BULK_CALLBACK_ID,
        "private_metadata": metadata,
        "title": plain_text(f"{verb} {count} calls"[:24]),
        "submit": plain_text(f"{verb} {count}"[:24]),
        "close": plain_text("Cancel"),
        "blocks": blocks,
    }


TOO_MANY_TEXT = "too many for one decision; decide it next"


def _call_text(view: ApprovalView) -> str:
    approval = view.approval
    about = (
        f"id `{escape(approval.approval_id, 100)}` · waiting {elapsed_text(view.waited_seconds)}"
    )
    if approval.requester:
        about += f" · for <@{escape(approval.requester, 40)}>"
    call = snapshot_text(approval)
    return call[: SECTION_TEXT_LIMIT - len(about) - 1] + "\n" + about


def left_out_text(left_out: Sequence[LeftOut]) -> str:
    lines = ["*Not included* (decide these on their own):"]
    lines += [f"• `{escape(item.approval_id, 100)}`: {item.why}" for item in left_out]
    return escape_join(lines, SECTION_TEXT_LIMIT)


def encode_bulk_context(action: BulkAction, tool_name: str, views: Sequence[ApprovalView]) -> str:
    calls = [[v.approval.approval_id, v.approval.arguments_digest] for v in views]
    return json.dumps({"action": action, "tool": tool_name, "calls": calls}, separators=(",", ":"))


@dataclass(frozen=True, kw_only=True)
class BulkSubmission:
    action: BulkAction
    tool_name: str
    items: tuple[BulkItem, ...]
    user_id: str
    view_id: str | None
    reason: str
    message: str | None


def parse_bulk_submission(body: Mapping[str, Any]) -> BulkSubmission | InvalidSubmission:
    view = mapping_field(body, "view")
    if view.get("callback_id") != BULK_CALLBACK_ID:
        raise InputError(f"unexpected view callback_id {view.get('callback_id')!r}")
    action, tool_name, items = decode_bulk_context(text_field(view, "private_metadata"))
    values = mapping_field(mapping_field(view, "state"), "values")
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
    view_id = view.get("id")
    return BulkSubmission(
        action=action,
        tool_name=tool_name,
        items=items,
        user_id=submitter(body),
        view_id=view_id if isinstance(view_id, str) else None,
        reason=reason,
        message=message if action == "reject" else None,
    )


def decode_bulk_context(metadata: str) -> tuple[BulkAction, str, tuple[BulkItem, ...]]:
    """What `encode_bulk_context` wrote; InputError for anything else."""
    try:
        data = json.loads(metadata)
    except ValueError:
        raise InputError("bulk modal private_metadata is not ours") from None
    if not isinstance(data, dict):
        raise InputError("bulk modal private_metadata is not ours")
    word, tool_name, calls = data.get("action"), data.get("tool"), data.get("calls")
    if word not in ("approve", "reject") or not isinstance(tool_name, str) or not tool_name:
        raise InputError("bulk modal private_metadata is not ours")
    action: BulkAction = "approve" if word == "approve" else "reject"
    if not isinstance(calls, list) or not 1 <= len(calls) <= BULK_LIMIT:
        raise InputError("bulk modal private_metadata holds no calls")
    items: list[BulkItem] = []
    for call in calls:
        if not (
            isinstance(call, list) and len(call) == 2 and all(isinstance(x, str) for x in call)
        ):
            raise InputError("bulk modal private_metadata holds a malformed call")
        approval_id, digest = call
        if not _DIGEST.fullmatch(digest):
            raise InputError("bulk modal private_metadata holds a malformed digest")
        items.append(BulkItem(approval_id=check_approval_id(approval_id), digest=digest))
    return action, tool_name, tuple(items)


# -- the summary ---------------------------------------------------------------------------


def summary_modal(
    *,
    action: BulkAction,
    tool_name: str,
    recorded: Sequence[ApprovalRecord],
    refused: Sequence[BulkRefusal],
) -> dict[str, Any]:
    """What the bulk decision did: each call decided (or counted toward its quorum) and
    each call not decided with why, as a single decision would have told it."""
    done = _DONE[action]
    closed = [r for r in recorded if r.status != "pending"]
    counted = [r for r in recorded if r.status == "pending"]
    total = len(closed) + len(counted) + len(refused)
    lines = [f"*{len(closed)} of {total} calls of `{escape(tool_name, 200)}` {done}.*"]
    lines += [f"• `{escape(r.approval_id, 100)}` {escape(r.status, 20)}" for r in closed]
    lines += [
        f"• `{escape(r.approval_id, 100)}` your approval counted; it needs "
        f"{r.required_approvals} from different people"
        for r in counted
    ]
    blocks: list[Block] = [mrkdwn_section(escape_join(lines, SECTION_TEXT_LIMIT))]
    if refused:
        why = [f"*Not decided ({len(refused)}):*"]
        why += [f"• `{escape(r.approval_id, 100)}`: {refused_text(r.error)}" for r in refused]
        blocks.append(mrkdwn_section(escape_join(why, SECTION_TEXT_LIMIT)))
    return notice(blocks, title="Bulk decision")


def failed_modal(error: ApprovalsError) -> dict[str, Any]:
    """Nothing was decided: why."""
    return notice([mrkdwn_section(refused_text(error))], title="Bulk decision")


RECORDING_TEXT = (
    ":hourglass_flowing_sand: Recording your decisions: the database is slow to answer. "
    "This dialog shows the outcome when it has it; your App Home too."
)


def notice(blocks: list[Block], *, title: str) -> dict[str, Any]:
    return {
        "type": "modal",
        "title": plain_text(title),
        "close": plain_text("Done"),
        "blocks": blocks,
    }
