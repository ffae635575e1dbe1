"""The "Read all arguments" modal: a call's whole arguments, page by page (pure).

A call whose arguments do not fit its card (bot.service.reading) is shown whole here, in
the card's own rendering (bot.review's renderer, uncut, with its script warnings): the
text is cut into code blocks of at most CHUNK_LIMIT UTF-16 units (Slack's section limit,
with room for the fences), preferably after a line end, never inside an escape (Slack's
`&amp;`, JSON's `\"`, a hiding character shown as `\u202e`) or before a combining mark,
so the blocks joined give back the text exactly. A page holds CHUNKS_PER_PAGE blocks
(well under Block Kit's 100 blocks a view); "Next page" replaces the modal with the next
one (views.update). The last page says so and, when the modal was opened by Approve or
Approve with changes, offers to continue to that form.

The modal carries the usual context (`read|id|channel|digest`, or `approve|…`/`edit|…`
when it continues to that form): the digest it shows, so a page of arguments that
changed meanwhile is never taken for a page of the new ones.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError
from bot.review.snapshot import ReviewSnapshot
from bot.service.reading import whole_text
from bot.slack.blocks import Block, escape, mrkdwn_context, mrkdwn_section, plain_text
from bot.slack.messages.forms import READ_ALL_TITLE, last_page_text, page_header_text
from bot.slack.modals import (
    ModalContext,
    decode_modal_context,
    encode_modal_context,
    mapping_field,
    submitter,
    text_field,
)

READ_CALLBACK_ID = "approval_read"
NEXT_PAGE_ACTION_ID = "approval_read_next"
CONTINUE_ACTION_ID = "approval_read_continue"
CHUNK_LIMIT = 2900  # a section holds 3000; the fences and line ends take 8
CHUNKS_PER_PAGE = 10
WARNINGS_LIMIT = 1500  # in the page's header (a context element holds 2000)
_LINE_END_WINDOW = 4  # look for a line end in the last quarter of a full chunk
# One shown character: a JSON or visible escape, one of Slack's, or a single character.
_TOKEN = re.compile(r"\\u[0-9a-fA-F]{4}|\\.|&(?:amp|lt|gt);|.", re.DOTALL)
_CONTINUE_LABELS = {"approve": "Continue to approve", "edit": "Continue to edit and approve"}


def argument_chunks(text: str, limit: int = CHUNK_LIMIT) -> list[str]:
    """`text` cut into consecutive pieces of at most `limit` UTF-16 units (what Slack
    counts): "".join(pieces) == text."""
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = _fit(text, start, limit)
        if end < len(text):
            line_end = text.rfind("\n", start + (end - start) * 3 // _LINE_END_WINDOW, end)
            end = line_end + 1 if line_end != -1 else _safe_cut(text, start, end)
        chunks.append(text[start:end])
        start = end
    return chunks or [""]


@dataclass(frozen=True, kw_only=True)
class WholeArguments:
    """A call's whole rendered arguments as pages of code-block chunks, and its script
    warnings (shown on every page)."""

    pages: list[list[str]]
    warnings: str


def whole_arguments(snapshot_json: str) -> WholeArguments:
    try:
        snapshot = ReviewSnapshot.from_json(snapshot_json)
    except InputError:
        return WholeArguments(pages=[["(snapshot unreadable)"]], warnings="")
    chunks = argument_chunks(whole_text(snapshot))
    pages = [chunks[at : at + CHUNKS_PER_PAGE] for at in range(0, len(chunks), CHUNKS_PER_PAGE)]
    return WholeArguments(pages=pages, warnings=snapshot.render_warnings(limit=WARNINGS_LIMIT))


def reading_modal(
    *,
    context: ModalContext,
    tool_name: str,
    whole: WholeArguments,
    page: int,
    may_continue: bool,
    note: str | None = None,
) -> dict[str, Any]:
    """Page `page` (1-based) of the `whole` arguments. On the last page, a modal opened
    by Approve or Approve with changes (`context.action`) offers to continue to that form
    when the person still `may_continue`."""
    pages = whole.pages
    if not 1 <= page <= len(pages):
        raise InputError(f"there is no page {page} of {len(pages)}")
    digest = context.digest or ""
    header = page_header_text(tool_name=tool_name, page=page, pages=len(pages), digest=digest)
    lines = [escape(note)] if note is not None else []
    lines.append(header)
    if whole.warnings:
        lines.append(f":warning: {whole.warnings}")
    blocks: list[Block] = [mrkdwn_context("\n".join(lines))]
    blocks.extend(
        mrkdwn_section(f"```\n{chunk.removesuffix(chr(10))}\n```") for chunk in pages[page - 1]
    )
    if page < len(pages):
        blocks.append(
            _actions(
                _button(
                    f"Next page ({page + 1} of {len(pages)})", NEXT_PAGE_ACTION_ID, str(page + 1)
                )
            )
        )
    else:
        blocks.append(mrkdwn_context(last_page_text(sum(map(len, (c for p in pages for c in p))))))
        label = _CONTINUE_LABELS.get(context.action)
        if label is not None and may_continue:
            blocks.append(
                _actions(_button(label, CONTINUE_ACTION_ID, context.action, primary=True))
            )
    return {
        "type": "modal",
        "callback_id": READ_CALLBACK_ID,
        "private_metadata": encode_modal_context(context),
        "title": plain_text(READ_ALL_TITLE),
        "close": plain_text("Close"),
        "blocks": blocks,
    }


@dataclass(frozen=True, kw_only=True)
class ReadingClick:
    """A button pressed inside the reading modal: next page, or continue to the form."""

    context: ModalContext
    user_id: str
    view_id: str
    view_hash: str | None
    trigger_id: str
    value: str

    @property
    def page(self) -> int:
        """The page a "Next page" button asks for."""
        if not self.value.isdigit() or not 1 <= int(self.value) <= 100_000:
            raise InputError(f"{self.value[:20]!r} is not a page number")
        return int(self.value)


def parse_reading_click(body: Mapping[str, Any]) -> ReadingClick:
    view = mapping_field(body, "view")
    if view.get("callback_id") != READ_CALLBACK_ID:
        raise InputError(f"unexpected view callback_id {view.get('callback_id')!r}")
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], Mapping):
        raise InputError("block_actions payload has no actions")
    context = decode_modal_context(text_field(view, "private_metadata"))
    if context.digest is None:
        raise InputError("the reading modal's private_metadata names no digest")
    hash_value = view.get("hash")
    return ReadingClick(
        context=context,
        user_id=submitter(body),
        view_id=text_field(view, "id"),
        view_hash=hash_value if isinstance(hash_value, str) and hash_value else None,
        trigger_id=text_field(body, "trigger_id"),
        value=text_field(actions[0], "value"),
    )


def _fit(text: str, start: int, limit: int) -> int:
    """The largest end such that text[start:end] is at most `limit` UTF-16 units."""
    used = 0
    for index in range(start, len(text)):
        used += 2 if ord(text[index]) > 0xFFFF else 1
        if used > limit:
            return index
    return len(text)


def _safe_cut(text: str, start: int, end: int) -> int:
    """The last cut at or before `end` that splits no escape and keeps a combining mark
    with its letter (`start` is such a cut: the text is read token by token from it)."""
    best = start
    for token in _TOKEN.finditer(text, start):
        if token.end() > end:
            break
        if token.end() == len(text) or not _joins_previous(text[token.end()]):
            best = token.end()
    return best if best > start else end


def _joins_previous(char: str) -> bool:
    return unicodedata.combining(char) != 0 or unicodedata.category(char) == "Mn"


def _button(label: str, action_id: str, value: str, *, primary: bool = False) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": plain_text(label),
        "action_id": action_id,
        "value": value,
    }
    if primary:
        button["style"] = "primary"
    return button


def _actions(*elements: dict[str, Any]) -> Block:
    return {"type": "actions", "block_id": "reading", "elements": list(elements)}
