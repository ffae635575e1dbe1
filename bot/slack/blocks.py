"""Block Kit primitives: escaping and clipping, mentions and dates, sections, inputs, and
the call block every card and modal shows.

Pure functions from values to JSON-ready dicts. Everything a person or a model wrote is
redacted (bot.credentials.redact_text), its hiding characters shown as escapes (the rule
of arguments, bot.review.visible: a reason, a message to the model or an answer that
holds U+202E or U+200B reads as what it is), then escaped for Slack mrkdwn and clipped to
Block Kit limits with a visible marker: redacted first, because a short secret grows
into the longer marker and a text clipped before would pass the limit. The arguments
come from the review snapshot (already redacted and escaped by bot.review). The gateway
redacts whatever it sends once more (bot.slack.gateway).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.credentials import redact_text
from bot.policy.rules import SLACK_USER_ID
from bot.review.visible import needs_care, shown_pieces
from bot.service.reading import REMEMBERED_SNAPSHOT_CHARS, card_rendering
from store.records import ApprovalRecord

Block = dict[str, Any]

SECTION_TEXT_LIMIT = 3000  # Block Kit: section text
CONTEXT_TEXT_LIMIT = 2000  # Block Kit: context element text
MESSAGE_TEXT_LIMIT = 3900  # chat.postMessage `text`: Slack truncates past 40k; keep it readable
TRUNCATED = "… (truncated)"
CALL_BLOCK_ID = "call"  # the call block of a card, and of the modal a card's button opens


def escape(text: str, limit: int | None = None) -> str:
    """Redact credentials, show hiding characters as escapes (`\\u202e`; line breaks are
    kept), escape Slack's control characters (&, <, >); clip to `limit` characters with
    a visible marker, never cutting inside an escape sequence."""
    entities = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
    redacted = _redact_short(text) if len(text) <= SHORT_TEXT else redact_text(text)
    pieces = shown_pieces(redacted, fences=False) if needs_care(redacted) else redacted
    escaped = [entities.get(piece, piece) for piece in pieces]
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


SHORT_TEXT = 200
"""Texts up to this long (ids, tool names, statuses, people) recur in every card and
list: their redaction is remembered."""
_redact_short = functools.lru_cache(maxsize=8192)(redact_text)


def escape_line(prefix: str, text: str) -> str:
    return prefix + escape(text, SECTION_TEXT_LIMIT - len(prefix))


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


def call_text(*, tool_name: str, arguments: str, digest: str, warnings: str = "") -> str:
    """The call as people review it: tool, redacted arguments and warnings (already
    escaped and fitted by bot.review, hiding characters shown as escapes), and the
    call's full keyed digest (HMAC-SHA256 over the real call: tool, agent, arguments)."""
    warning = f":warning: *Mixed scripts:* {warnings}\n" if warnings else ""
    return (
        f"*Tool:* `{escape(tool_name, 200)}`\n```\n{arguments}\n```\n{warning}"
        f"*Call digest (HMAC-SHA256):* `{escape(digest, 100)}`"
    )


def snapshot_text(approval: ApprovalRecord) -> str:
    """The call block for a stored (already redacted) snapshot; one we cannot read is
    shown as such, never raw.

    The same call block is rendered for its card, for each person's modal and for every
    update of the card; it is a function of the tool name, the snapshot's text and the
    digest alone, so the rendering of snapshots up to REMEMBERED_SNAPSHOT_CHARS is
    remembered (REMEMBERED_CALL_BLOCKS of them)."""
    if len(approval.snapshot) <= REMEMBERED_SNAPSHOT_CHARS:
        return _remembered_call_block(
            approval.tool_name, approval.snapshot, approval.arguments_digest
        )
    return _call_block(approval.tool_name, approval.snapshot, approval.arguments_digest)


def _call_block(tool_name: str, snapshot_json: str, digest: str) -> str:
    # The rendering (and its room) is the rule's, shared with its check: bot.service.reading
    rendered = card_rendering(snapshot_json)
    warnings, arguments = rendered if rendered is not None else ("", "(snapshot unreadable)")
    return call_text(tool_name=tool_name, arguments=arguments, digest=digest, warnings=warnings)


REMEMBERED_CALL_BLOCKS = 1024
_remembered_call_block = functools.lru_cache(maxsize=REMEMBERED_CALL_BLOCKS)(_call_block)


def plain_text(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def mrkdwn_section(text: str, *, block_id: str | None = None) -> Block:
    block: Block = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
    if block_id is not None:
        block["block_id"] = block_id
    return block


def mrkdwn_context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def text_input(
    block_id: str,
    action_id: str,
    *,
    label: str,
    max_length: int,
    hint: str | None = None,
    optional: bool | None = None,
    initial_value: str | None = None,
) -> Block:
    """A multiline plain-text input block."""
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": action_id,
        "multiline": True,
        "max_length": max_length,
    }
    if initial_value is not None:
        element["initial_value"] = initial_value
    block: Block = {"type": "input", "block_id": block_id}
    if optional is not None:
        block["optional"] = optional
    block["label"] = plain_text(label)
    if hint is not None:
        block["hint"] = plain_text(hint)
    block["element"] = element
    return block
