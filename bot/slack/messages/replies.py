"""Answers to the person who acted: help, refusals, what an action did, and why a
thread reply was not passed on. Private (ephemeral or slash-command answers)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.errors import AlreadyDecidedError, ApprovalsError, NotAuthorizedError
from bot.slack.blocks import CONTEXT_TEXT_LIMIT, escape, person, slack_date
from bot.slack.messages.approval_lines import quorum_line

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
    "• `/approvals away until 2026-12-24 [stand-in @person]`: while you are away, cards "
    "that would come to you by direct message go to your stand-in, who may decide what you "
    "may decide (never their own calls)\n"
    "• `/approvals back`: you are back; your stand-in no longer decides for you\n"
    "• `/approvals help`: this message"
)

# -- refusals and failures -----------------------------------------------------------

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


# -- answers -------------------------------------------------------------------------

RECONCILED_TEXT = ":white_check_mark: Reconciled; the run goes on."
REVOKED_WITHOUT_REASON = "(revoked with /approvals; no reason given)"
CANCELLED_WITHOUT_REASON = "(cancelled with /approvals; no reason given)"


def cancelled_text(run_id: str, closed: int) -> str:
    calls = "" if not closed else f"; {closed} open call(s) closed without running"
    return f":stop_sign: Cancelled run `{escape(run_id, 100)}`{calls}."


def vote_counted_text(*, count: int, required: int, voters: Sequence[str]) -> str:
    line = quorum_line(count=count, required=required, voters=voters)
    return f":ballot_box_with_check: Your approval counts: {line}"


def away_text(until: datetime, stand_in: str | None) -> str:
    when = f"{until:%Y-%m-%d %H:%M} UTC"
    if stand_in is None:
        return (
            f":palm_tree: You are away until {when}: cards are not sent to you by direct "
            "message meanwhile (you may still decide). `/approvals back` ends it."
        )
    return (
        f":palm_tree: You are away until {when}; {person(stand_in)} stands in for you: cards "
        "that would come to you by direct message go to them, and they may decide the calls "
        "you may decide (never their own). `/approvals back` ends it."
    )


BACK_TEXT = ":wave: Welcome back: your stand-in no longer decides for you."
NOT_AWAY_TEXT = "You were not away; nothing changed."


def revoked_text(approval_id: str) -> str:
    return f":leftwards_arrow_with_hook: Revoked `{escape(approval_id, 100)}`; it will not run."


def cannot_post_text(channel_id: str) -> str:
    return (
        f":warning: I could not post in <#{escape(channel_id, 50)}>, so nobody can see this "
        "run's review cards. Invite me with `/invite @approvals` and start the task again."
    )


START_BUSY_TEXT = (
    ":hourglass_flowing_sand: The bot is busy starting other runs and did not start this "
    "one; send the command again in a minute."
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


def waiting_for_approval_text(pending: int) -> str:
    calls = "call waits" if pending == 1 else "calls wait"
    return (
        f":lock: This run is paused: {pending} tool {calls} for a decision on the cards above. "
        "Your message was not passed on; send it again once the run has answered."
    )


# -- a decision the database did not take in time ------------------------------------

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
