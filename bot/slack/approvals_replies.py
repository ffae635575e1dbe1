"""Texts of the `/approvals` answers (ephemeral): the list, one approval, its trail."""

from __future__ import annotations

import json
from collections.abc import Sequence

from bot.service import ApprovalView
from bot.slack.blocks import MESSAGE_TEXT_LIMIT, escape, escape_join, person, slack_date
from bot.slack.cards import quorum_line
from bot.slack.home import approval_line
from store.api import AuditEvent

APPROVALS_HELP = (
    "*/approvals* shows and manages approvals. Only you see the answers.\n"
    "• `/approvals list [page]`: what waits for your decision\n"
    "• `/approvals show ID`: one approval, its votes and what you may do\n"
    "• `/approvals revoke ID [reason]`: withdraw a call before it runs\n"
    "• `/approvals audit ID`: the audit trail of one approval\n"
    "• `/approvals reconcile ID result <text> | retry | abort`: settle a call whose outcome "
    "is unknown (admins and the tool's approvers)\n"
    "• `/approvals help`: this message"
)
MAX_DETAIL_CHARS = 300


def pending_list_text(items: Sequence[ApprovalView], *, page: int, more: bool) -> str:
    if not items:
        if page > 1:
            return f":information_source: There is no page {page}."
        return ":white_check_mark: Nothing waits for your decision."
    lines = [f"*Waiting for your decision (page {page}):*"]
    for view in items:
        quorum = quorum_line(count=view.approvals_count, required=view.required, voters=())
        expiry = ""
        if view.approval.expires_at:
            expiry = f", expires {slack_date(view.approval.expires_at)}"
        requester = view.approval.requester
        by = f" for {person(requester)}" if requester else ""
        lines.append(f"{approval_line(view.approval)}{by} · {quorum}{expiry}")
    if more:
        lines.append(f"More: `/approvals list {page + 1}`")
    return escape_join(lines, MESSAGE_TEXT_LIMIT)


def show_text(view: ApprovalView) -> str:
    approval = view.approval
    may = [
        word
        for word, allowed in (
            ("decide", view.can_decide),
            ("revoke", view.can_revoke),
            ("reconcile", view.can_reconcile),
        )
        if allowed
    ]
    approvers = ", ".join(escape(a, 40) for a in view.approvers) or "anyone but the requester"
    lines = [
        approval_line(approval),
        quorum_line(count=view.approvals_count, required=view.required, voters=view.voters),
        f"Requested by {person(approval.requester) if approval.requester else 'nobody known'}"
        f" on {slack_date(approval.created_at)}",
        f"Approvers: {approvers}",
        f"Arguments digest: `{escape(approval.arguments_digest, 100)}`",
    ]
    if approval.expires_at and approval.status == "pending":
        lines.append(f"Expires {slack_date(approval.expires_at)}")
    if approval.reason:
        lines.append(f"Reason: {escape(approval.reason, 500)}")
    if may:
        lines.append(f"You may {', '.join(may)}.")
    elif view.why_not:
        lines.append(f"You may not decide: {escape(view.why_not, 300)}")
    return escape_join(lines, MESSAGE_TEXT_LIMIT)


def audit_text(approval_id: str, events: Sequence[AuditEvent]) -> str:
    if not events:
        return f":information_source: No audit events for `{escape(approval_id, 100)}`."
    lines = [f"*Audit trail of `{escape(approval_id, 100)}`:*"]
    for event in events:
        actor = f" {person(event.actor)}" if event.actor else ""
        detail = ""
        if event.detail:
            raw = json.dumps(dict(event.detail), ensure_ascii=False, sort_keys=True)
            raw = raw.replace("`", "'")
            detail = f" `{escape(raw, MAX_DETAIL_CHARS)}`"
        lines.append(
            f"{event.seq}. {slack_date(event.at)} *{escape(event.kind, 40)}*{actor}{detail}"
        )
    return escape_join(lines, MESSAGE_TEXT_LIMIT)
