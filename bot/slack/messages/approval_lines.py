"""Approvals in words: one approval or its quorum on a line (cards, App Home), and the
`/approvals` answers built from them (the pending list, one approval, its audit trail)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from bot.service import ApprovalView
from bot.slack.blocks import MESSAGE_TEXT_LIMIT, escape, escape_join, person, slack_date
from bot.slack.messages.forms import READ_ALL_LABEL
from store.records import ApprovalRecord, AuditEvent

MAX_VOTERS_SHOWN = 20
MAX_DETAIL_CHARS = 300


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


def approval_line(approval: ApprovalRecord) -> str:
    """One approval on one line: tool, status, id, and where its card is."""
    where = ""
    if approval.slack_channel and approval.slack_ts:
        where = f" in <#{escape(approval.slack_channel, 50)}>"
    return (
        f"• `{escape(approval.tool_name, 200)}` *{escape(approval.status, 20)}*{where} "
        f"(id `{escape(approval.approval_id, 100)}`)"
    )


def decision_line(approval: ApprovalRecord) -> str:
    who = approval.revoked_by if approval.status == "revoked" else approval.decider
    by = f" by {person(who)}" if who else ""
    when = approval.revoked_at if approval.status == "revoked" else approval.decided_at
    at = f" {slack_date(when)}" if when else ""
    return (
        f"• `{escape(approval.tool_name, 200)}` *{escape(approval.status, 20)}*{by}{at} "
        f"(id `{escape(approval.approval_id, 100)}`)"
    )


NOTHING_WAITS_TEXT = ":white_check_mark: Nothing waits for your decision."


def pending_list_text(items: Sequence[ApprovalView], *, page: int, more: bool) -> str:
    if not items:
        if page > 1:
            return f":information_source: There is no page {page}."
        return NOTHING_WAITS_TEXT
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
    may = view.allowed_actions()
    approvers = ", ".join(escape(a, 40) for a in view.approvers) or "anyone but the requester"
    lines = [
        approval_line(approval),
        quorum_line(count=view.approvals_count, required=view.required, voters=view.voters),
        f"Requested by {person(approval.requester) if approval.requester else 'nobody known'}"
        f" on {slack_date(approval.created_at)}",
        f"Approvers: {approvers}",
        f"Call digest: `{escape(approval.arguments_digest, 100)}`",
    ]
    if approval.expires_at and approval.status == "pending":
        lines.append(f"Expires {slack_date(approval.expires_at)}")
    if approval.reason:
        lines.append(f"Reason: {escape(approval.reason, 500)}")
    if view.must_read and approval.status == "pending":
        done = "you have read them" if view.has_read else "you have not read them yet"
        lines.append(
            f"The arguments are too long for the card: an approval counts only after "
            f"*{READ_ALL_LABEL}* on the card ({done})."
        )
    if view.standing is not None:
        lines.append(
            f"Stands for the rest of its run ({escape(view.standing.decision, 20)} for every "
            f"later `{escape(approval.tool_name, 200)}` call); revoking it stops that."
        )
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
