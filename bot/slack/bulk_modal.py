"""Bulk decisions in Slack, the modal: every selected call as its card shows it, what
was left out of the selection and why, the one reason (and on reject the one message to
the agent); then the summary of what was decided and what was not, and why. The App Home
part that selects the calls is bot.slack.bulk_home.

The modal's `private_metadata` (at most 3000 characters, Block Kit) carries the selected
calls' ids and the digest each was shown with: a vote counts only for that digest. A
selection that would not fit is cut, and what was cut is said. Parsing is pure: a
payload that is not what Slack sends raises InputError naming the field; bad input is an
`InvalidSubmission` answered inline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.errors import ApprovalsError, InputError
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
from bot.slack.bulk_home import VERBS, BulkAction
from bot.slack.decision_modal import (
    MAX_MESSAGE_CHARS,
    MESSAGE_ACTION_ID,
    MESSAGE_BLOCK_ID,
    reason_and_message,
)
from bot.slack.messages.replies import refused_text
from bot.slack.modals import (
    InvalidSubmission,
    check_approval_id,
    mapping_field,
    reason_input,
    submitter,
    text_field,
)
from store.records import ApprovalRecord

BULK_CALLBACK_ID = "bulk_decision"
PRIVATE_METADATA_LIMIT = 3000  # Block Kit
_DONE: Mapping[BulkAction, str] = {"approve": "approved", "reject": "rejected"}
_DIGEST = re.compile(r"[0-9a-f]{64}")


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
    verb = VERBS[action]
    count = len(included)
    blocks: list[Block] = [
        mrkdwn_section(
            f"*{verb} {count} call{'s' if count != 1 else ''} of `{escape(tool_name, 200)}`* "
            "with one reason. Each is checked as if decided alone and recorded on its own; "
            "a call that fails a check is left undecided and you are told why."
        )
    ]
    for view in included:  # the call as its card shows it, then whose and how long
        blocks += [mrkdwn_section(snapshot_text(view.approval)), mrkdwn_context(_about(view))]
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


def _about(view: ApprovalView) -> str:
    approval = view.approval
    about = (
        f"id `{escape(approval.approval_id, 100)}` · waiting {elapsed_text(view.waited_seconds)}"
    )
    if approval.requester:
        about += f" · for <@{escape(approval.requester, 40)}>"
    return about


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
    given = reason_and_message(values)
    if isinstance(given, InvalidSubmission):
        return given
    reason, message = given
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
