"""What the bot posts in a run's thread: the task as its root, the answer, reminders,
escalations, approvers mentioned, expiries, refusals to execute, and runs that stop;
and the outcome a requester gets by direct message."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from bot.policy.durations import format_duration
from bot.policy.rules import SLACK_GROUP_ID
from bot.service import UncertainCall
from bot.slack.blocks import MESSAGE_TEXT_LIMIT, escape, escape_line, person, slack_date
from store.records import ApprovalRecord, Escalation, RunRecord

MAX_MENTIONS = 30


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


def run_paused_text(actor: str, reason: str) -> str:
    return (
        f":double_vertical_bar: {person(actor)} paused this run: {escape(reason, 1000)}. "
        "It starts nothing new (a step already running finishes) until it is resumed."
    )


def run_unpaused_text(actor: str) -> str:
    return f":arrow_forward: {person(actor)} resumed this run."


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


def escalated_text(approval: ApprovalRecord, escalation: Escalation) -> str:
    """The thread's message when an escalation step fired."""
    who = ", ".join(mention(a) for a in escalation.approvers[:MAX_MENTIONS])
    seconds = round((escalation.due_at - approval.created_at).total_seconds())
    waited = format_duration(timedelta(seconds=max(seconds, 0)))
    return (
        f":arrow_double_up: {who}: nobody decided `{escape(approval.tool_name, 200)}` (id "
        f"`{escape(approval.approval_id, 100)}`) within {waited}, so it escalated to you: "
        "you may decide it on the card above."
    )


def mentioned_text(approval: ApprovalRecord, approvers: Sequence[str]) -> str:
    """The thread's message for approvers too many to send a direct message each."""
    who = ", ".join(mention(a) for a in approvers[:MAX_MENTIONS])
    return (
        f":bell: {who}: `{escape(approval.tool_name, 200)}` (id "
        f"`{escape(approval.approval_id, 100)}`) waits for a decision on the card above."
    )


def outcome_text(run: RunRecord, approval: ApprovalRecord) -> str:
    """The requester's direct message when their call was decided."""
    shown = run.channel is not None and not run.channel.startswith("D")
    where = f" in <#{escape(run.channel, 100)}>" if shown and run.channel else ""
    who = approval.revoked_by if approval.status == "revoked" else approval.decider
    by = f" by {person(who)}" if who else ""
    why = approval.revoke_reason if approval.status == "revoked" else approval.reason
    reason = f" *Reason:* {escape(why, 1000)}" if why else ""
    runs = {
        "approved": "It runs now.",
        "rejected": "It did not run; the agent was told.",
        "expired": "Nobody decided in time: it did not run; the agent was told.",
        "revoked": "It will not run.",
    }.get(approval.status, "")
    return (
        f"Your call `{escape(approval.tool_name, 200)}` (id "
        f"`{escape(approval.approval_id, 100)}`){where} was {escape(approval.status, 50)}"
        f"{by}. {runs}{reason}"
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


def needs_migration_text(reason: str) -> str:
    return (
        ":construction: This run cannot go on here yet: "
        f"{escape(reason, MESSAGE_TEXT_LIMIT - 300)}. "
        "Its decisions are kept; it resumes once a deployment that can read it (the agent "
        "version, the key) runs again "
        "(`approvals-bot runs resume RUN`), or it can be cancelled (`/approvals cancel RUN`)."
    )


def resume_stalled_text(attempts: int) -> str:
    return (
        f":warning: This run could not go on: the bot's database failed {attempts} times in "
        "a row while it resumed. The bot keeps trying in the background; the answer will "
        "come here when it goes through."
    )
