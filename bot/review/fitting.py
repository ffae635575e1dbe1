"""Fitting reviewed text into Slack: escaped for mrkdwn, hiding characters made visible,
cut with a visible marker to a length counted as Slack counts it (UTF-16 code units)."""

from __future__ import annotations

import unicodedata
from itertools import accumulate

from bot.review.visible import hides, make_visible, needs_care, shown_pieces

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}  # "&" first: the others add one


def _escape(text: str, *, care: bool | None = None) -> str:
    """Hiding characters and fences made visible (`care`: whether `text` needs that, when
    the caller knows), then Slack's three control characters."""
    if care if care is not None else needs_care(text):
        text = make_visible(text)
    for char, entity in _ESCAPES.items():
        text = text.replace(char, entity)
    return text


def slack_length(text: str) -> int:
    """Length in UTF-16 code units: characters outside the BMP count twice."""
    return len(text.encode("utf-16-le")) // 2


def _rendered_cost(char: str) -> int:
    escaped = _ESCAPES.get(char)
    if escaped is not None:
        return len(escaped)
    return 2 if ord(char) > 0xFFFF else 1


def _piece_cost(piece: str) -> int:
    if len(piece) == 1:
        return _rendered_cost(piece)
    return len(piece)  # an escape: ASCII only


def _truncation_marker(remaining: int) -> str:
    return f"… (truncated, {remaining} more characters)"


def fit(raw: str, budget: int) -> str:
    """Escape `raw`, cutting it (with a marker) so the result is at most `budget` long.

    The cut is made in the raw text before escaping, so no escape sequence (Slack's or
    a visible `\\u202e`) is ever split, and it steps back over combining marks so a
    character keeps its accents.
    """
    # Every character costs at least 1, so only the first `budget + 1` can matter.
    head = raw[: budget + 1]
    care = needs_care(head)
    if care:
        costs = list(accumulate(_piece_cost(piece) for piece in shown_pieces(head)))
    else:
        costs = list(accumulate(_rendered_cost(char) for char in head))
    if len(raw) <= budget and (not costs or costs[-1] <= budget):
        return _escape(raw, care=care)  # `head` is all of `raw` here
    # The marker's own length depends on how much is cut; the widest count bounds it.
    room = budget - len("\n" + _truncation_marker(len(raw)))
    keep = _prefix_length(costs, room)
    while keep > 0 and _joins_previous(raw[keep]):
        keep -= 1
    kept = _escape(raw[:keep], care=None if care else False)  # a prefix of a clean head is clean
    return kept + "\n" + _truncation_marker(len(raw) - keep)


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
    """Combining marks belong to the character before (the others that join are shown
    as escapes, so they stand alone)."""
    return not hides(char) and (
        unicodedata.combining(char) != 0 or unicodedata.category(char) == "Mn"
    )
