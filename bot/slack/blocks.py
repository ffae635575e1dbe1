"""Block Kit builders: the run's root message, the call block, the reason modal, thread
messages (review cards are in bot.slack.cards).

Pure functions from records to JSON-ready dicts. Everything a person or a model wrote is
escaped for Slack mrkdwn and clipped to Block Kit limits with a visible marker; the
arguments come from the review snapshot (already redacted and escaped by bot.review).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.errors import InputError
from bot.policy import SLACK_USER_ID
from bot.review import ReviewSnapshot
from bot.runtime import PendingCall
from bot.slack.payloads import (
    CALL_BLOCK_ID,
    DECISION_CALLBACK_ID,
    MAX_MESSAGE_CHARS,
    MAX_REASON_CHARS,
    MESSAGE_ACTION_ID,
    MESSAGE_BLOCK_ID,
    REASON_ACTION_ID,
    REASON_BLOCK_ID,
    ModalContext,
    encode_modal_context,
)
from store.api import ApprovalRecord, RunRecord

Block = dict[str, Any]

SECTION_TEXT_LIMIT = 3000  # Block Kit: section text
CONTEXT_TEXT_LIMIT = 2000  # Block Kit: context element text
MESSAGE_TEXT_LIMIT = 3900  # chat.postMessage `text`: Slack truncates past 40k; keep it readable
ARGUMENTS_LIMIT = SECTION_TEXT_LIMIT - 400  # arguments inside the call block (tool + digest around)
TRUNCATED = "… (truncated)"


def escape(text: str, limit: int | None = None) -> str:
    """Escape Slack's control characters (&, <, >); clip to `limit` characters with a
    visible marker, never cutting inside an escape sequence."""
    entities = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
    escaped = [entities.get(char, char) for char in text]
    if limit is None or sum(map(len, escaped)) <= limit:
        return "".join(escaped)
    budget = limit - len(TRUNCATED)
    out: list[str] = []
    for piece in escaped:
        if budget < len(piece):
            break
        out.append(piece)
        budget -= len(piece)
    return "".join(out) + TRUNCATED


def person(actor_id: str) -> str:
    """A Slack user id as a mention; any other actor (the service, a CLI operator) as
    plain escaped text, never a broken mention."""
    if SLACK_USER_ID.fullmatch(actor_id):
        return f"<@{actor_id}>"
    return f"`{escape(actor_id, 100)}`"


def slack_date(moment: datetime) -> str:
    """A date Slack renders in the reader's time zone, with an ISO fallback."""
    fallback = moment.isoformat(timespec="seconds")
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"


def run_root_text(*, agent_name: str, requester: str | None, task: str) -> str:
    who = person(requester) if requester else "Someone"
    return escape_line(f"{who} asked *{escape(agent_name)}*: ", task)


def run_root_blocks(*, run: RunRecord, task: str) -> list[Block]:
    return [
        mrkdwn_section(
            run_root_text(agent_name=run.agent_name, requester=run.requester, task=task)
        ),
        mrkdwn_context(
            f"Run `{escape(run.run_id)}` · reviews and the answer arrive in this thread; "
            "reply here to continue the conversation once the run is idle."
        ),
    ]


def escape_line(prefix: str, text: str) -> str:
    return prefix + escape(text, SECTION_TEXT_LIMIT - len(prefix))


def call_text(*, tool_name: str, arguments: str, digest: str) -> str:
    """The call as people review it: tool, redacted arguments (already escaped and fitted
    by bot.review), and the full SHA-256 digest of the real arguments."""
    return (
        f"*Tool:* `{escape(tool_name, 200)}`\n```\n{arguments}\n```\n"
        f"*Arguments digest (SHA-256):* `{escape(digest, 100)}`"
    )


def snapshot_text(approval: ApprovalRecord) -> str:
    """The call block for a stored (already redacted) snapshot; one we cannot read is
    shown as such, never raw."""
    try:
        arguments = ReviewSnapshot.from_json(approval.snapshot).render_text(limit=ARGUMENTS_LIMIT)
    except InputError:
        arguments = "(snapshot unreadable)"
    return call_text(
        tool_name=approval.tool_name, arguments=arguments, digest=approval.arguments_digest
    )


def decision_modal(*, context: ModalContext, call: str | None) -> dict[str, Any]:
    """The reason modal. `call` is the card's own (escaped, redacted) call block: tool,
    arguments and digest, so the person sees what they decide on."""
    verb = {"approve": "Approve", "reject": "Reject", "revoke": "Revoke"}.get(
        context.action, context.action.capitalize()
    )
    blocks: list[Block] = [
        mrkdwn_section(call or "(the call is shown on the card)", block_id=CALL_BLOCK_ID),
        _text_input(
            REASON_BLOCK_ID,
            REASON_ACTION_ID,
            label="Reason",
            hint="Recorded in the audit log with your name. The agent does not see it.",
            max_length=MAX_REASON_CHARS,
            optional=False,
        ),
    ]
    if context.action == "reject":
        blocks.append(
            _text_input(
                MESSAGE_BLOCK_ID,
                MESSAGE_ACTION_ID,
                label="Message to the agent",
                hint="What the model is told instead of the tool's result.",
                max_length=MAX_MESSAGE_CHARS,
                optional=True,
            )
        )
    return {
        "type": "modal",
        "callback_id": DECISION_CALLBACK_ID,
        "private_metadata": encode_modal_context(context),
        "title": plain_text(f"{verb} tool call"),  # at most 24 characters
        "submit": plain_text(verb),
        "close": plain_text("Cancel"),
        "blocks": blocks,
    }


def final_answer_text(*, final_output: str | None, status: str) -> str:
    if status == "completed" and final_output:
        return escape(final_output, MESSAGE_TEXT_LIMIT)
    if status == "max_turns":
        return ":warning: The run stopped after its maximum number of turns."
    return f":information_source: The run ended ({escape(status, 100)})."


def run_failed_text(error: str) -> str:
    return f":x: The run stopped: {escape(error, MESSAGE_TEXT_LIMIT - 100)}"


def uncertain_call_text(call: PendingCall) -> str:
    return (
        f":warning: `{escape(call.tool_name, 200)}` may or may not have taken effect: the "
        "process stopped while it ran and its replay policy is manual, so it was not run "
        "again. An operator must check and reconcile execution key "
        f"`{escape(call.execution_key, 200)}` before the run goes on."
    )


def cannot_post_text(channel_id: str) -> str:
    return (
        f":warning: I could not post in <#{escape(channel_id, 50)}>, so nobody can see this "
        "run's review cards. Invite me with `/invite @approvals` and start the task again."
    )


BUSY_TEXT = (
    ":hourglass_flowing_sand: The agent is still working on this run; send your message "
    "again once it has answered."
)

CLOSED_TEXT = ":no_entry_sign: This run was cancelled; start a new one with `/agent`."


def waiting_for_approval_text(pending: int) -> str:
    calls = "call waits" if pending == 1 else "calls wait"
    return (
        f":lock: This run is paused: {pending} tool {calls} for a decision on the cards above. "
        "Your message was not passed on; send it again once the run has answered."
    )


def already_decided_text(*, status: str, decider: str | None, decided_at: datetime | None) -> str:
    who = f" by {person(decider)}" if decider else ""
    when = f" {slack_date(decided_at)}" if decided_at else ""
    if status == "executed":
        return f":information_source: Nothing changed: this call already ran (approved{who}{when})."
    status_text = escape(status, 50)
    return f":information_source: Nothing changed: this call was already {status_text}{who}{when}."


def escape_join(lines: Sequence[str], limit: int) -> str:
    """Join already-escaped lines, dropping whole lines past `limit` with a marker."""
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > limit - len(TRUNCATED):
            out.append(TRUNCATED)
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)


def plain_text(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def mrkdwn_section(text: str, *, block_id: str | None = None) -> Block:
    block: Block = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
    if block_id is not None:
        block["block_id"] = block_id
    return block


def mrkdwn_context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def _text_input(
    block_id: str, action_id: str, *, label: str, hint: str, max_length: int, optional: bool
) -> Block:
    return {
        "type": "input",
        "block_id": block_id,
        "optional": optional,
        "label": plain_text(label),
        "hint": plain_text(hint),
        "element": {
            "type": "plain_text_input",
            "action_id": action_id,
            "multiline": True,
            "max_length": max_length,
        },
    }
