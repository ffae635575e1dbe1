"""Messages the bot posts in a run's thread about an approval's time running out, or
about an approved call stopped right before it ran."""

from __future__ import annotations

from collections.abc import Sequence

from bot.policy import SLACK_GROUP_ID
from bot.slack.blocks import escape, person, slack_date
from store.api import ApprovalRecord

MAX_MENTIONS = 30


def mention(approver: str) -> str:
    """A policy approver id as a mention: a user group pings its members."""
    if SLACK_GROUP_ID.fullmatch(approver):
        return f"<!subteam^{approver}>"
    return person(approver)


def reminder_text(approval: ApprovalRecord, approvers: Sequence[str]) -> str:
    who = ", ".join(mention(a) for a in approvers[:MAX_MENTIONS]) or "Approvers"
    expiry = f" It expires {slack_date(approval.expires_at)}." if approval.expires_at else ""
    return (
        f":alarm_clock: {who}: `{escape(approval.tool_name, 200)}` still waits for a "
        f"decision on the card above (id `{escape(approval.approval_id, 100)}`).{expiry}"
    )


def expired_text(approval: ApprovalRecord) -> str:
    who = f"{person(approval.requester)}: " if approval.requester else ""
    return (
        f":hourglass: {who}nobody decided `{escape(approval.tool_name, 200)}` in time, so it "
        "expired: the call did not run and the agent was told."
    )


def refused_text(approval: ApprovalRecord, reason: str) -> str:
    who = f"{person(approval.requester)}: " if approval.requester else ""
    return (
        f":no_entry_sign: {who}`{escape(approval.tool_name, 200)}` (id "
        f"`{escape(approval.approval_id, 100)}`) was not run: {escape(reason, 1000)}. "
        "The agent was told."
    )
