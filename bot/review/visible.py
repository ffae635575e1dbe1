"""Hiding characters made visible: every character that hides, reorders or fakes a line
(zero-width, bidi controls, U+2028/2029, other control and format characters,
blank-looking letters) is shown as its JSON escape (`\\u202e`), so two different calls
never look alike and the text still means exactly the arguments."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

# Printable to Python, but blank or invisible on screen, or changing the look of the
# character before them: fillers, invisible marks, variation selectors, braille blank.
_EXTRA_BLANKS = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)
_BACKTICK_ESCAPE = "\\u0060"


def arguments_json(arguments: Mapping[str, Any], *, indent: int | None = 2) -> str:
    """JSON of `arguments` (pretty, or on one line with `indent=None`) with every hiding
    character as its JSON escape: what a person reads and edits means exactly these
    arguments (it parses back to them)."""
    text = json.dumps(dict(arguments), indent=indent, sort_keys=True, ensure_ascii=False)
    return make_visible(text, fences=False) if needs_care(text) else text


def visible(text: str) -> str:
    """A single string with its hiding characters, line breaks and backslashes written
    as JSON escapes (`a\\u202eb`); Slack markup is left to the caller."""
    if text.isprintable() and "\\" not in text and not _EXTRA_BLANKS.search(text):
        return text
    return "".join(json_escape(char) if char == "\\" or hides(char) else char for char in text)


def hides(char: str) -> bool:
    """Control, format, separator (but the space), private-use and unassigned
    characters (str.isprintable is False for exactly those), and the extra blanks."""
    return not char.isprintable() or _EXTRA_BLANKS.match(char) is not None


@functools.lru_cache(maxsize=512)
def json_escape(char: str) -> str:
    """`\\u202e`, or a surrogate pair past the BMP, or JSON's short form (`\\n`)."""
    return json.dumps(char)[1:-1]


def needs_care(text: str) -> bool:
    """Whether `text` (JSON or notes, whose line breaks are structure) holds a hiding
    character or a code fence: most texts do not, and skip the character walk."""
    if "```" in text:
        return True
    printable = text.replace("\n", "").isprintable()
    if text.isascii():  # the extra blanks are all outside ASCII
        return not printable
    return not printable or _EXTRA_BLANKS.search(text) is not None


def shown_pieces(text: str, *, fences: bool = True) -> list[str]:
    """What each character of `text` is shown as: itself, its JSON escape when it hides,
    and from the third backtick of a run on an escaped backtick (a value cannot close
    the caller's code block). Line breaks are kept: they are the JSON's own."""
    pieces: list[str] = []
    run = 0
    for char in text:
        if char == "`" and fences:
            run += 1
            pieces.append(_BACKTICK_ESCAPE if run >= 3 else char)
            continue
        run = 0
        pieces.append(json_escape(char) if char != "\n" and hides(char) else char)
    return pieces


def make_visible(text: str, *, fences: bool = True) -> str:
    return "".join(shown_pieces(text, fences=fences))
