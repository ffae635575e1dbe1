"""What a human reviews before a tool runs: canonical arguments, their digest, a snapshot.

- `canonical_arguments` is the one byte form of a call's arguments and `arguments_digest`
  SHA-256 hex over those bytes (both from bot.canonical, shared with the run core). The
  digest is always of the REAL arguments: a redacted secret still changes the digest
  when it changes.
- `review_snapshot` is what the reviewer sees: the arguments a tool chooses to show,
  with secret-looking keys and values replaced by `REDACTED` (see bot.credentials).
  `ReviewSnapshot.render_text` renders it as Slack mrkdwn that fits a Block Kit section.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from bot.canonical import arguments_digest, canonical_arguments
from bot.credentials import REDACTED, redact, redact_text
from bot.errors import InputError

__all__ = [
    "REDACTED",
    "SECTION_TEXT_LIMIT",
    "ReviewSnapshot",
    "arguments_digest",
    "canonical_arguments",
    "review_snapshot",
]

SECTION_TEXT_LIMIT = 3000
"""Block Kit's limit for a section's text; `render_text` leaves room for a header."""
_MIN_RENDER_LIMIT = 200


@dataclass(frozen=True, kw_only=True)
class ReviewSnapshot:
    """The redacted view of one tool call, plus the digest of its real arguments."""

    tool_name: str
    arguments: dict[str, Any]
    redacted_paths: list[str]
    digest: str
    omitted_fields: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "redacted_paths": list(self.redacted_paths),
            "omitted_fields": list(self.omitted_fields),
            "digest": self.digest,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReviewSnapshot:
        try:
            snapshot = cls(
                tool_name=data["tool_name"],
                arguments=data["arguments"],
                redacted_paths=list(data["redacted_paths"]),
                digest=data["digest"],
                omitted_fields=list(data.get("omitted_fields", [])),
            )
        except (KeyError, TypeError) as error:
            raise InputError(f"not a review snapshot: missing or malformed {error}") from None
        if not isinstance(snapshot.arguments, dict) or not isinstance(snapshot.tool_name, str):
            raise InputError("not a review snapshot: tool_name/arguments have the wrong type")
        return snapshot

    @classmethod
    def from_json(cls, text: str) -> ReviewSnapshot:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise InputError(f"not a review snapshot: invalid JSON ({error})") from None
        if not isinstance(data, dict):
            raise InputError("not a review snapshot: expected a JSON object")
        return cls.from_dict(data)

    def render_text(self, limit: int = SECTION_TEXT_LIMIT - 100) -> str:
        """The arguments as Slack-escaped text, at most `limit` long, for a code block.

        Pretty JSON of the (redacted) arguments, then a line naming what was redacted
        or left out. The caller shows the tool name and digest around it. Text that is
        too long is cut with a visible marker; the cut never splits an escape sequence
        or a character. Length is counted in UTF-16 code units (what Slack counts), so
        it also fits when counted in code points. Triple backticks inside a value are
        broken up, so a value cannot close the caller's code block.
        """
        if limit < _MIN_RENDER_LIMIT:
            raise InputError(f"render limit {limit} is below the minimum {_MIN_RENDER_LIMIT}")
        notes = _fit("\n".join(self._notes()), limit // 4)
        tail = f"\n{notes}" if notes else ""
        body = json.dumps(self.arguments, indent=2, sort_keys=True, ensure_ascii=False)
        return _fit(_neutralise_fences(body), limit - _slack_length(tail)) + tail

    def _notes(self) -> list[str]:
        notes = []
        if self.redacted_paths:
            notes.append(f"{len(self.redacted_paths)} redacted: {', '.join(self.redacted_paths)}")
        if self.omitted_fields:
            notes.append(f"not shown: {', '.join(self.omitted_fields)}")
        return notes


def review_snapshot(
    tool_name: str, arguments: Mapping[str, Any], *, shown_fields: Sequence[str] | None = None
) -> ReviewSnapshot:
    """Snapshot a call for review: digest over the real arguments, then narrow and redact.

    `shown_fields` (a tool's choice) limits the snapshot to those top-level fields; a
    listed field the call does not have is simply absent, the others are named in
    `omitted_fields` so the reviewer knows something was left out.
    """
    digest = arguments_digest(arguments)
    if shown_fields is None:
        shown = dict(arguments)
        omitted: list[str] = []
    else:
        wanted = set(shown_fields)
        shown = {name: value for name, value in arguments.items() if name in wanted}
        omitted = sorted(redact_text(name) for name in arguments if name not in wanted)
    redacted, paths = redact(shown)
    return ReviewSnapshot(
        tool_name=tool_name,
        arguments=redacted,
        redacted_paths=paths,
        digest=digest,
        omitted_fields=omitted,
    )


_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}  # "&" first: the others add one
_FENCE = "```"
_ZERO_WIDTH_SPACE = "\u200b"
_ZERO_WIDTH_JOINER = "\u200d"


def _escape(text: str) -> str:
    """Slack's three control characters; everything else is shown as written."""
    for char, entity in _ESCAPES.items():
        text = text.replace(char, entity)
    return text


def _neutralise_fences(text: str) -> str:
    """A value cannot close our code block: break up triple backticks visibly-neutrally."""
    return text.replace(_FENCE, f"`{_ZERO_WIDTH_SPACE}`{_ZERO_WIDTH_SPACE}`")


def _slack_length(text: str) -> int:
    """Length in UTF-16 code units: characters outside the BMP count twice."""
    return len(text.encode("utf-16-le")) // 2


def _rendered_cost(char: str) -> int:
    escaped = _ESCAPES.get(char)
    if escaped is not None:
        return len(escaped)
    return 2 if ord(char) > 0xFFFF else 1


def _truncation_marker(remaining: int) -> str:
    return f"… (truncated, {remaining} more characters)"


def _fit(raw: str, budget: int) -> str:
    """Escape `raw`, cutting it (with a marker) so the result is at most `budget` long.

    The cut is made in the raw text before escaping, so no escape sequence is ever split,
    and it steps back over combining marks and joiners so a character keeps its accents.
    """
    # Every character costs at least 1, so only the first `budget + 1` can matter.
    costs = list(accumulate(_rendered_cost(char) for char in raw[: budget + 1]))
    if len(raw) <= budget and (not costs or costs[-1] <= budget):
        return _escape(raw)
    # The marker's own length depends on how much is cut; the widest count bounds it.
    room = budget - len("\n" + _truncation_marker(len(raw)))
    keep = _prefix_length(costs, room)
    while keep > 0 and (_joins_previous(raw[keep]) or raw[keep - 1] == _ZERO_WIDTH_JOINER):
        keep -= 1
    return _escape(raw[:keep]) + "\n" + _truncation_marker(len(raw) - keep)


def _prefix_length(cumulative_costs: list[int], room: int) -> int:
    """The most characters whose rendered cost fits in `room` (binary search)."""
    low, high = 0, len(cumulative_costs)
    while low < high:
        middle = (low + high + 1) // 2
        if cumulative_costs[middle - 1] <= room:
            low = middle
        else:
            high = middle - 1
    return low


def _joins_previous(char: str) -> bool:
    """Combining marks, variation selectors and zero-width joiners belong to the char before."""
    return (
        unicodedata.combining(char) != 0
        or char in "\u200d\ufe0e\ufe0f"
        or unicodedata.category(char) == "Mn"
    )
