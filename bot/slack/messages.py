"""What the bot says to people, in one place: help, answers, refusals, thread messages.

Every sentence the bot posts in a run's thread, answers privately (ephemeral messages,
slash-command answers) or shows inline in a form is built here, escaped for Slack mrkdwn
and clipped to Slack's limits. The cards, modals and App Home (bot.slack.cards, the
modal modules, bot.slack.home) lay these out with their own labels and buttons.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from bot.errors import AlreadyDecidedError, ApprovalsError, NotAuthorizedError
from bot.policy import SLACK_GROUP_ID
from bot.service import ApprovalView, UncertainCall
from bot.slack.blocks import (
    CONTEXT_TEXT_LIMIT,
    MESSAGE_TEXT_LIMIT,
    escape,
    escape_join,
    escape_line,
    person,
    slack_date,
)
from store.api import ApprovalRecord, AuditEvent

MAX_MENTIONS = 30
MAX_VOTERS_SHOWN = 20
MAX_DETAIL_CHARS = 300

# -- help ----------------------------------------------------------------------------

AGENT_HELP = (
    "*/agent* starts an agent run in this channel; its review cards and answer arrive in "
    "the run's thread.\n"
    "• `/agent <task>`: the default agent, e.g. `/agent deploy payments 1.2.3`\n"
    "• `/agent @name <task>` or `/agent agent=name <task>`: another registered agent\n"
    "• `/agent help`: this message"
)
APPROVALS_HELP = (
    "*/approvals* shows and manages approvals. Only you see the answers.\n"
    "• `/approvals list [page]`: what waits for your decision\n"
    "• `/approvals show ID`: one approval, its votes and what you may do\n"
    "• `/approvals revoke ID [reason]`: withdraw a call before it runs\n"
    "• `/approvals audit ID`: the audit trail of one approval\n"
    "• `/approvals reconcile ID result <text> | retry | abort`: settle a call whose outcome "
    "is unknown (admins and the tool's approvers)\n"
    "• `/approvals cancel RUN [reason]`: cancel a run; its open calls never run (the run's "
    "requester and admins)\n"
    "• `/approvals help`: this message"
)

# -- refusals and failures, to the person who acted ------------------------------------

UNEXPECTED_FAILURE_TEXT = (
    ":x: Something went wrong on our side while handling that (the bot's log has the "
    "details). Check the card or thread before trying again."
)
TRIGGER_EXPIRED_TEXT = (
    ":hourglass: Slack gave me too little time to open the form for that click. "
    "Press the button again."
)
TOO_BIG_TO_EDIT_TEXT = (
    ":warning: These arguments are too large (or partly hidden) to edit in Slack; approve or "
    "reject them as they are."
)
EXTERNAL_REFUSED_TEXT = (
    ":no_entry: This app only takes requests from people of the Slack workspace it is "
    "installed in; nothing was done."
)
MAY_NOT_REVOKE_TEXT = (
    ":no_entry: You may not revoke this call (only its requester, its approvers and admins "
    "may, before it runs)."
)


def warning(error: ApprovalsError) -> str:
    """One of our errors as a line for the person who acted (escaped: it may quote them)."""
    return f":warning: {escape(str(error), CONTEXT_TEXT_LIMIT)}"


def refusal(error: ApprovalsError) -> str:
    """A NotAuthorizedError as a line for the person refused."""
    return f":no_entry: {escape(str(error), CONTEXT_TEXT_LIMIT)}"


def refused_text(error: ApprovalsError) -> str:
    """Why nothing changed, for the person who acted."""
    if isinstance(error, AlreadyDecidedError) and error.status != "pending":
        return already_decided_text(
            status=error.status, decider=error.decider, decided_at=error.decided_at
        )
    if isinstance(error, NotAuthorizedError):
        return refusal(error)
    return warning(error)


def may_not_decide_text(why_not: str | None) -> str:
    return f":no_entry: {escape(why_not or 'you may not decide this call')}"


def already_decided_text(*, status: str, decider: str | None, decided_at: datetime | None) -> str:
    who = f" by {person(decider)}" if decider else ""
    when = f" {slack_date(decided_at)}" if decided_at else ""
    if status == "executed":
        return f":information_source: Nothing changed: this call already ran (approved{who}{when})."
    status_text = escape(status, 50)
    return f":information_source: Nothing changed: this call was already {status_text}{who}{when}."


# -- answers, to the person who acted --------------------------------------------------

RECONCILED_TEXT = ":white_check_mark: Reconciled; the run goes on."
REVOKED_WITHOUT_REASON = "(revoked with /approvals; no reason given)"
CANCELLED_WITHOUT_REASON = "(cancelled with /approvals; no reason given)"


def cancelled_text(run_id: str, closed: int) -> str:
    calls = "" if not closed else f"; {closed} open call(s) closed without running"
    return f":stop_sign: Cancelled run `{escape(run_id, 100)}`{calls}."


def vote_counted_text(*, count: int, required: int, voters: Sequence[str]) -> str:
    line = quorum_line(count=count, required=required, voters=voters)
    return f":ballot_box_with_check: Your approval counts: {line}"


def revoked_text(approval_id: str) -> str:
    return f":leftwards_arrow_with_hook: Revoked `{escape(approval_id, 100)}`; it will not run."


def cannot_post_text(channel_id: str) -> str:
    return (
        f":warning: I could not post in <#{escape(channel_id, 50)}>, so nobody can see this "
        "run's review cards. Invite me with `/invite @approvals` and start the task again."
    )


BUSY_TEXT = (
    ":hourglass_flowing_sand: The agent is still working on this run; send your message "
    "again once it has answered."
)
CLOSED_TEXT = (
    ":no_entry_sign: This run is closed (cancelled, or its content removed by retention); "
    "start a new one with `/agent`."
)
RETRYING_TEXT = (
    ":hourglass_flowing_sand: This run is waiting for the bot's database, which failed "
    "while the run resumed; the bot keeps trying. Your message was not passed on; send it "
    "again once the run has answered."
)


def resume_stalled_text(attempts: int) -> str:
    return (
        f":warning: This run could not go on: the bot's database failed {attempts} times in "
        "a row while it resumed. The bot keeps trying in the background; the answer will "
        "come here when it goes through."
    )


def needs_migration_text(reason: str) -> str:
    return (
        ":construction: This run cannot go on here yet: "
        f"{escape(reason, MESSAGE_TEXT_LIMIT - 300)}. "
        "Its decisions are kept; it resumes once that agent version is deployed again "
        "(`approvals-bot runs resume RUN`), or it can be cancelled (`/approvals cancel RUN`)."
    )


def waiting_for_approval_text(pending: int) -> str:
    calls = "call waits" if pending == 1 else "calls wait"
    return (
        f":lock: This run is paused: {pending} tool {calls} for a decision on the cards above. "
        "Your message was not passed on; send it again once the run has answered."
    )


# -- the run's thread ------------------------------------------------------------------


def run_root_text(*, agent_name: str, requester: str | None, task: str) -> str:
    who = person(requester) if requester else "Someone"
    return escape_line(f"{who} asked *{escape(agent_name)}*: ", task)


def run_root_context(run_id: str) -> str:
    return (
        f"Run `{escape(run_id)}` · reviews and the answer arrive in this thread; "
        "reply here to continue the conversation once the run is idle."
    )


def final_answer_text(*, final_output: str | None, status: str) -> str:
    if status == "completed" and final_output:
        return escape(final_output, MESSAGE_TEXT_LIMIT)
    if status == "max_turns":
        return ":warning: The run stopped after its maximum number of turns."
    return f":information_source: The run ended ({escape(status, 100)})."


def run_cancelled_text(actor: str, reason: str) -> str:
    return (
        f":stop_sign: {person(actor)} cancelled this run: {escape(reason, 1000)}. "
        "Nothing more of it runs; start a new one with `/agent`."
    )


def run_failed_text(error: str) -> str:
    return f":x: The run stopped: {escape(error, MESSAGE_TEXT_LIMIT - 100)}"


def uncertain_call_text(call: UncertainCall) -> str:
    return (
        f":warning: `{escape(call.tool_name, 200)}` may or may not have taken effect: the "
        "process stopped while it ran and its replay policy is manual, so it was not run "
        "again. An operator must check and reconcile execution key "
        f"`{escape(call.execution_key, 200)}` before the run goes on."
    )


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


def execution_refused_text(approval: ApprovalRecord, reason: str) -> str:
    who = f"{person(approval.requester)}: " if approval.requester else ""
    return (
        f":no_entry_sign: {who}`{escape(approval.tool_name, 200)}` (id "
        f"`{escape(approval.approval_id, 100)}`) was not run: {escape(reason, 1000)}. "
        "The agent was told."
    )


# -- approvals in a line ---------------------------------------------------------------


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


# -- /approvals answers ----------------------------------------------------------------

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


# -- reading a call whole -----------------------------------------------------------------

READ_ALL_LABEL = "Read all arguments"
READ_ALL_TITLE = "Full arguments"  # a modal title: at most 24 characters
CUT_CARD_TEXT = (
    ":warning: The arguments are cut above. An approval counts only from someone who has "
    f"read them whole: *{READ_ALL_LABEL}*."
)
ARGUMENTS_CHANGED_TEXT = "The arguments changed while you read them: here they are again."


def page_header_text(*, tool_name: str, page: int, pages: int, digest: str) -> str:
    return (
        f"`{escape(tool_name, 200)}` · page {page} of {pages} · arguments digest "
        f"`{escape(digest, 100)}`"
    )


def last_page_text(characters: int) -> str:
    return (
        f":white_check_mark: That is the end of the arguments ({characters:,} characters, "
        "as the card renders them)."
    )


# -- inline errors in forms ------------------------------------------------------------

GIVE_A_REASON = "Give a reason: it goes into the audit log."
GIVE_THE_RESULT = "Say what the call really did (the agent sees this)."
GIVE_THE_ARGUMENTS = "Give the arguments as a JSON object."
ARGUMENTS_NOT_AN_OBJECT = "The arguments must be a JSON object ({...})."


def keep_under(what: str, limit: int) -> str:
    return f"Keep the {what} under {limit} characters."


def not_json_text(problem: str, line: int, column: int) -> str:
    return f"Not valid JSON: {problem} (line {line}, column {column})."


# -- a decision the database did not take in time ----------------------------------------

NOT_RECORDED_YET_TEXT = (
    "Not recorded yet: the database did not answer in time. You will get a message if it "
    "records this later; if you do not, submit again."
)
NOT_RECORDED_TEXT = "Not recorded: the database failed. Nothing changed; submit again shortly."


def recorded_late_text(approval_id: str) -> str:
    return (
        f":white_check_mark: Your decision on `{escape(approval_id, 100)}` was recorded after "
        "all (the database answered late)."
    )


def not_recorded_late_text(approval_id: str) -> str:
    return (
        f":x: Your decision on `{escape(approval_id, 100)}` could not be recorded (the "
        "database failed); nothing changed. Submit it again."
    )
