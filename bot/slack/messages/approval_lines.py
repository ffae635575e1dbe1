"""Approvals in words: what a review card says (its title, who asked, how it closed, the
standing decisions, the uncertain call's warning), one approval or its quorum on a line
(cards, App Home), and the `/approvals` answers built from them (the pending list, one
approval, its audit trail)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from bot.service import ApprovalView
from bot.service.events import CardReach
from bot.service.waiting import elapsed_text
from bot.slack.blocks import (
    CONTEXT_TEXT_LIMIT,
    MESSAGE_TEXT_LIMIT,
    escape,
    escape_join,
    person,
    slack_date,
)
from bot.slack.messages.forms import READ_ALL_LABEL
from bot.slack.messages.run_thread import mention
from store.records import (
    ApprovalRecord,
    ApprovalWindow,
    AuditEvent,
    RunRecord,
    StandingDecision,
)

MAX_VOTERS_SHOWN = 20
MAX_DETAIL_CHARS = 300
MAX_STANDING_SHOWN = 5  # each line at most ~300 characters


# -- the review card --------------------------------------------------------------------

_TITLES = {
    "approved": ":white_check_mark: *Approved*",
    "rejected": ":no_entry: *Rejected*",
    "expired": ":hourglass: *Expired*",
    "revoked": ":leftwards_arrow_with_hook: *Revoked*",
    "pending": ":lock: *Approval needed*",
}


def card_title(approval: ApprovalRecord) -> str:
    """The card's first line: its state, the tool, and who decided when."""
    status = approval.status
    title = f"{_TITLES.get(status, f'*{escape(status, 50)}*')}: `{escape(approval.tool_name, 200)}`"
    if status in ("approved", "rejected") and approval.decider:
        title += f" by {person(approval.decider)}"
    if status == "approved" and approval.decided_at:
        title += f" {slack_date(approval.decided_at)}"
    return title


def card_about(run: RunRecord, approval: ApprovalRecord) -> str:
    requester = f" · requested by {person(approval.requester)}" if approval.requester else ""
    expiry = ""
    if approval.status == "pending" and approval.expires_at:
        expiry = f" · expires {slack_date(approval.expires_at)}"
    ident = f" · id `{escape(approval.approval_id, 100)}`"
    return f"Agent *{escape(run.agent_name, 200)}*{requester}{expiry}{ident}"


def closing_line(approval: ApprovalRecord) -> str | None:
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


def not_run_line(why: str) -> str:
    """Why an approved call was stopped right before it ran."""
    return f"*Not run:* {escape(why, CONTEXT_TEXT_LIMIT - 100)}"


def not_amendable_text(engine: str) -> str:
    return (
        f"Runs of {engine} agents cannot be approved with changes: approve or reject the "
        "call as it is."
    )


TOOL_NOT_AMENDABLE_TEXT = (
    "This tool's arguments cannot be changed here (its schema cannot be checked safely): "
    "approve or reject the call as it is."
)


def standing_line(approval: ApprovalRecord, standing: Sequence[StandingDecision]) -> str | None:
    """What the card says of the run's standing decisions: on the card that made one,
    that it stands and how to stop it; on a pending card, which ones hold in its run."""
    own = next((d for d in standing if d.approval_id == approval.approval_id), None)
    if own is not None:
        verb = "approved" if own.decision == "approved" else "rejected"
        return (
            f":pushpin: Stands for the rest of this run: every later "
            f"`{escape(own.tool_name, 200)}` call is {verb} in {person(own.decider)}'s name. "
            f"Stop it: `/approvals revoke {escape(own.approval_id, 100)}`"
        )
    if approval.status != "pending" or not standing:
        return None
    held = [
        f"`{escape(d.tool_name, 100)}` {d.decision} by {person(d.decider)} "
        f"(`{escape(d.approval_id, 100)}`)"
        for d in standing[:MAX_STANDING_SHOWN]
    ]
    return escape_join([":pushpin: Standing in this run:", *held], CONTEXT_TEXT_LIMIT)


def window_line(approval: ApprovalRecord, window: ApprovalWindow) -> str:
    """What a card says of an approval window: on the card that opened it, what it
    covers and how to stop it; on a card it approved, whose window and until when."""
    tool = escape(window.tool_name, 200)
    matching = (
        f" with the same {', '.join(escape(f, 100) for f in window.match_fields[:10])}"
        if window.match_fields
        else ""
    )
    until = slack_date(window.expires_at)
    if window.window_id == approval.approval_id:
        return (
            f":stopwatch: Opened an approval window: until {until}, every later `{tool}` call"
            f"{matching} is approved in {person(window.decider)}'s name (each still gets its "
            "own card and checks). Stop it from App Home."
        )
    return (
        f":stopwatch: Approved by the approval window {person(window.decider)} opened "
        f"(`{escape(window.window_id, 100)}`), open until {until}{matching}."
    )


# -- how far the card reached: direct messages, escalation ---------------------------

MAX_ESCALATED_SHOWN = 10  # mentions per escalation line


def reach_lines(reach: CardReach) -> list[str]:
    """What the card says of where it went: how many people got it by direct message,
    and each escalation step that fired (whom to, when)."""
    lines: list[str] = []
    if reach.sent_to:
        where = (
            "" if reach.decided_in_channel else "; decide there, in App Home or with `/approvals`"
        )
        noun = "person" if reach.sent_to == 1 else "people"
        lines.append(
            f":incoming_envelope: Sent by direct message to {reach.sent_to} {noun}{where}."
        )
    for step in reach.escalated:
        who = ", ".join(mention(a) for a in step.approvers[:MAX_ESCALATED_SHOWN])
        when = f" {slack_date(step.fired_at)}" if step.fired_at else ""
        lines.append(f":arrow_double_up: Escalated to {who}{when}: nobody had decided in time.")
    return lines


def copy_note(
    *, channel: str | None, stands_in_for: str | None, away_until: datetime | None
) -> str:
    """The line a card's copy in someone's direct messages opens with."""
    shown = channel is not None and not channel.startswith("D")  # a DM has no link to show
    asked = f" (asked in <#{escape(channel, 100)}>)" if shown and channel else ""
    if stands_in_for is None:
        return f":envelope_with_arrow: This call waits for your decision{asked}."
    until = f", away until {slack_date(away_until)}" if away_until else ""
    return (
        f":envelope_with_arrow: This call waits for a decision{asked}; it comes to you as "
        f"the stand-in of {person(stands_in_for)}{until}."
    )


def approval_card_text(approval: ApprovalRecord) -> str:
    """The notification text (and the fallback for clients without blocks)."""
    if approval.status == "pending":
        return f"Approval needed: {escape(approval.tool_name, 200)}"
    who = approval.revoked_by if approval.status == "revoked" else approval.decider
    by = f" by {person(who)}" if who else ""
    return f"{approval.status.capitalize()}{by}: {escape(approval.tool_name, 200)}"


def audited_card_text(approval: ApprovalRecord) -> str:
    """The notification text of an audit-only call's card."""
    return f"Ran without waiting (audit only): {escape(approval.tool_name, 200)}"


def uncertain_call_text(tool_name: str) -> str:
    return (
        f":warning: *Outcome unknown:* `{escape(tool_name, 200)}` may or may not "
        "have taken effect: the process stopped while it ran and its replay policy is "
        "manual, so it was not run again."
    )


def uncertain_about_text(agent_name: str, execution_key: str) -> str:
    return (
        f"Agent *{escape(agent_name, 200)}* · execution key "
        f"`{escape(execution_key, 200)}` · admins and the tool's approvers may "
        "reconcile it"
    )


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


def waited_line(view: ApprovalView) -> str:
    """How long the call has waited for people ("waiting 12 min"), or waited until it
    closed ("approved after 1 h 5 min"): its time to decision."""
    waited = elapsed_text(view.waited_seconds)
    status = view.approval.status
    return f"waiting {waited}" if status == "pending" else f"{escape(status, 20)} after {waited}"


NOTHING_WAITS_TEXT = ":white_check_mark: Nothing waits for your decision."


LIST_PAGE_SIZE = 20  # calls on a page of `/approvals list`


def more_pending_text() -> str:
    """App Home's pointer to the calls it does not show: `/approvals list` pages by its own
    size, so its first page starts with the calls Home shows, not after them."""
    return (
        f"More wait for you: `/approvals list` shows them all, {LIST_PAGE_SIZE} a page"
        " (`/approvals list 2` the next)."
    )


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
        waited = waited_line(view)
        lines.append(f"{approval_line(view.approval)}{by} · {quorum} · {waited}{expiry}")
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
        f" on {slack_date(approval.created_at)} ({waited_line(view)})",
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
