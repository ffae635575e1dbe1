"""Review cards under governance: the quorum line, the buttons, the closed states, and
the uncertain call's card.

A pending card shows "N of M approvals" and who gave them, with Approve, Approve with
changes, Reject and Revoke (each button's value is the approval id only). An approved
card keeps Revoke until the call runs, or until the last check before it ran refused
it (the card then says why it was not run); rejected, expired and revoked cards have no
buttons and say who, when and why. Pure builders, like bot.slack.blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.errors import InputError
from bot.runtime import PendingCall
from bot.slack.blocks import (
    CONTEXT_TEXT_LIMIT,
    Block,
    escape,
    mrkdwn_context,
    mrkdwn_section,
    person,
    slack_date,
    snapshot_text,
)
from bot.slack.payloads import (
    ABORT_ACTION_ID,
    APPROVE_ACTION_ID,
    CALL_BLOCK_ID,
    EDIT_ACTION_ID,
    RECORD_RESULT_ACTION_ID,
    REJECT_ACTION_ID,
    RETRY_ACTION_ID,
    REVOKE_ACTION_ID,
)
from store.api import ApprovalRecord, RunRecord

_TITLES = {
    "approved": ":white_check_mark: *Approved*",
    "rejected": ":no_entry: *Rejected*",
    "expired": ":hourglass: *Expired*",
    "revoked": ":leftwards_arrow_with_hook: *Revoked*",
    "pending": ":lock: *Approval needed*",
}
MAX_VOTERS_SHOWN = 20


def quorum_line(*, count: int, required: int, voters: Sequence[str]) -> str:
    """ "1 of 2 approvals · approved by @a" (the voters on the current digest)."""
    noun = "approval" if required == 1 else "approvals"
    line = f"*{count} of {required} {noun}*"
    if voters:
        shown = ", ".join(person(voter) for voter in voters[:MAX_VOTERS_SHOWN])
        more = (
            f" and {len(voters) - MAX_VOTERS_SHOWN} more" if len(voters) > MAX_VOTERS_SHOWN else ""
        )
        line += f" · approved by {shown}{more}"
    return line


def approval_card_blocks(
    *,
    run: RunRecord,
    approval: ApprovalRecord,
    voters: Sequence[str] | None,
    not_run: str | None = None,
) -> list[Block]:
    """The card for an approval in any state, from its record and the voters on its
    current digest (None: not known here, the quorum line is left out). `not_run` is why
    an approved call was stopped right before it ran: said on the card, no buttons."""
    status = approval.status
    title = f"{_TITLES.get(status, f'*{escape(status, 50)}*')}: `{escape(approval.tool_name, 200)}`"
    if status in ("approved", "rejected") and approval.decider:
        title += f" by {person(approval.decider)}"
    if status == "approved" and approval.decided_at:
        title += f" {slack_date(approval.decided_at)}"
    blocks: list[Block] = [
        mrkdwn_section(title),
        mrkdwn_context(_about(run, approval)),
    ]
    if voters is not None:
        line = quorum_line(count=len(voters), required=approval.required_approvals, voters=voters)
        blocks.append(mrkdwn_context(line))
    blocks.append(mrkdwn_section(snapshot_text(approval), block_id=CALL_BLOCK_ID))
    closing = _closing_line(approval)
    if closing:
        blocks.append(mrkdwn_context(closing))
    if not_run is not None:
        blocks.append(mrkdwn_context(f"*Not run:* {escape(not_run, CONTEXT_TEXT_LIMIT - 100)}"))
    buttons = card_buttons(approval) if not_run is None else []
    if buttons:
        blocks.append({"type": "actions", "block_id": "decision", "elements": buttons})
    return blocks


def approval_card_text(approval: ApprovalRecord) -> str:
    """The notification text (and the fallback for clients without blocks)."""
    if approval.status == "pending":
        return f"Approval needed: {escape(approval.tool_name, 200)}"
    who = approval.revoked_by if approval.status == "revoked" else approval.decider
    by = f" by {person(who)}" if who else ""
    return f"{approval.status.capitalize()}{by}: {escape(approval.tool_name, 200)}"


def card_buttons(approval: ApprovalRecord) -> list[Block]:
    approval_id = approval.approval_id
    if approval.status == "pending":
        return [
            _button("Approve", APPROVE_ACTION_ID, approval_id, style="primary"),
            _button("Approve with changes", EDIT_ACTION_ID, approval_id),
            _button("Reject", REJECT_ACTION_ID, approval_id, style="danger"),
            _button("Revoke", REVOKE_ACTION_ID, approval_id),
        ]
    if approval.status == "approved":
        return [_button("Revoke", REVOKE_ACTION_ID, approval_id)]
    return []


def uncertain_call_value(run_id: str, execution_key: str) -> str:
    """The uncertain card's button value: which run, which call."""
    return f"{run_id}:{execution_key}"


def parse_uncertain_call_value(value: str) -> tuple[str, str]:
    run_id, sep, execution_key = value.partition(":")
    if not sep or not run_id or not execution_key:
        raise InputError(f"{value[:80]!r} does not name an uncertain call")
    return run_id, execution_key


def uncertain_card_blocks(*, run: RunRecord, call: PendingCall) -> list[Block]:
    """An uncertain call: an operator checks the world, then records the result, retries
    or aborts. The buttons' value names the run and the call's execution key."""
    value = uncertain_call_value(run.run_id, call.execution_key)
    return [
        mrkdwn_section(
            f":warning: *Outcome unknown:* `{escape(call.tool_name, 200)}` may or may not "
            "have taken effect: the process stopped while it ran and its replay policy is "
            "manual, so it was not run again.",
            block_id=CALL_BLOCK_ID,
        ),
        mrkdwn_context(
            f"Agent *{escape(run.agent_name, 200)}* · execution key "
            f"`{escape(call.execution_key, 200)}` · admins and the tool's approvers may "
            "reconcile it"
        ),
        {
            "type": "actions",
            "block_id": "reconcile",
            "elements": [
                _button("Record result", RECORD_RESULT_ACTION_ID, value, style="primary"),
                _button("Retry", RETRY_ACTION_ID, value),
                _button("Abort", ABORT_ACTION_ID, value, style="danger"),
            ],
        },
    ]


def _about(run: RunRecord, approval: ApprovalRecord) -> str:
    requester = f" · requested by {person(approval.requester)}" if approval.requester else ""
    expiry = ""
    if approval.status == "pending" and approval.expires_at:
        expiry = f" · expires {slack_date(approval.expires_at)}"
    ident = f" · id `{escape(approval.approval_id, 100)}`"
    return f"Agent *{escape(run.agent_name, 200)}*{requester}{expiry}{ident}"


def _closing_line(approval: ApprovalRecord) -> str | None:
    reason = escape(approval.reason or "(no reason given)", CONTEXT_TEXT_LIMIT - 300)
    if approval.status == "revoked":
        who = person(approval.revoked_by) if approval.revoked_by else "someone"
        when = f" {slack_date(approval.revoked_at)}" if approval.revoked_at else ""
        why = escape(approval.revoke_reason or "(no reason given)", CONTEXT_TEXT_LIMIT - 300)
        return f"Revoked by {who}{when}; it will not run. *Reason:* {why}"
    if approval.status == "expired":
        when = slack_date(approval.expires_at) if approval.expires_at else "its deadline"
        return f"Nobody decided before {when}; the call did not run and the agent was told."
    if approval.status == "rejected":
        when = f" {slack_date(approval.decided_at)}" if approval.decided_at else ""
        return f"Rejected{when}. *Reason:* {reason}"
    if approval.status == "approved":
        return f"*Reason:* {reason}"
    return None


def _button(label: str, action_id: str, value: str, *, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": label, "emoji": True},
        "action_id": action_id,
        "value": value,
    }
    if style is not None:
        button["style"] = style
    return button
