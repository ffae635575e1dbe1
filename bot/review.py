"""What a human reviews before a tool runs: the call's snapshot, shown faithfully.

- The digest a card shows is the call's keyed digest (bot.canonical.call_digest, taken
  from the run's state): `review_snapshot` is given it and never hashes anything itself.
  It always covers the REAL arguments: a redacted secret still changes it.
- `review_snapshot` is what the reviewer sees: the arguments a tool chooses to show,
  with secret-looking keys and values replaced by `REDACTED` (see bot.credentials), and
  whatever an earlier snapshot of the same call hid (`keep_hidden`, from
  `carried_redactions`): a value hidden once stays hidden.
- The one renderer: `ReviewSnapshot.render_text` (Slack mrkdwn that fits a Block Kit
  section), `arguments_json` (the edit form's JSON) and `visible` (single strings) show
  every character that hides, reorders or fakes a line (zero-width, bidi controls,
  U+2028/2029, other control and format characters, blank-looking letters) as its JSON
  escape (`\u202e`), so two different calls never look alike and the text still means
  exactly the arguments. `ReviewSnapshot.script_warnings` names tokens that mix scripts
  (a Cyrillic `а` in a Latin host name).
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from bot.canonical import canonical_arguments
from bot.credentials import REDACTED, child_path, redact, redact_text, values_at_paths
from bot.errors import InputError

__all__ = [
    "REDACTED",
    "SECTION_TEXT_LIMIT",
    "ReviewSnapshot",
    "arguments_json",
    "canonical_arguments",
    "carried_redactions",
    "review_snapshot",
    "visible",
]

SECTION_TEXT_LIMIT = 3000
"""Block Kit's limit for a section's text; `render_text` leaves room for a header."""
_MIN_RENDER_LIMIT = 200
_DIGEST = re.compile(r"[0-9a-f]{64}")
_MAX_WARNINGS = 5


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
        return _fit(body, limit - _slack_length(tail)) + tail

    def render_warnings(self, limit: int = 1000) -> str:
        """The script warnings as Slack-escaped lines ("" when there are none), at most
        `limit` long; the caller shows them next to the arguments."""
        return _fit("\n".join(self.script_warnings()), limit) if limit > 0 else ""

    def script_warnings(self) -> list[str]:
        """One line per token of the shown arguments (keys and values) whose letters come
        from more than one script, such as `p\\u0430ypal` (a Cyrillic а), at most five."""
        found = list(_mixed_script_tokens(self.arguments, "$"))
        lines = [
            f"{path}: {_pointed_out(token)} mixes {' and '.join(scripts)} letters"
            for path, token, scripts in found[:_MAX_WARNINGS]
        ]
        if len(found) > _MAX_WARNINGS:
            lines.append(f"… and {len(found) - _MAX_WARNINGS} more tokens that mix scripts")
        return lines

    def _notes(self) -> list[str]:
        notes = []
        if self.redacted_paths:
            paths = ", ".join(visible(path) for path in self.redacted_paths)
            notes.append(f"{len(self.redacted_paths)} redacted: {paths}")
        if self.omitted_fields:
            notes.append(f"not shown: {', '.join(visible(name) for name in self.omitted_fields)}")
        return notes


def review_snapshot(
    tool_name: str,
    arguments: Mapping[str, Any],
    *,
    digest: str,
    shown_fields: Sequence[str] | None = None,
    keep_hidden: Collection[str] = (),
) -> ReviewSnapshot:
    """Snapshot a call for review: narrow, then redact; `digest` is the call's keyed
    digest (RunState.call_digest), shown as given.

    `shown_fields` (a tool's choice) limits the snapshot to those top-level fields; a
    listed field the call does not have is simply absent, the others are named in
    `omitted_fields` so the reviewer knows something was left out. `keep_hidden` names
    paths (as `redacted_paths` names them) that stay hidden even where the rules would
    show them: what an earlier snapshot of the call hid (`carried_redactions`).
    """
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise InputError("a review snapshot needs the call's digest: 64 lowercase hex")
    if shown_fields is None:
        shown = dict(arguments)
        omitted: list[str] = []
    else:
        wanted = set(shown_fields)
        shown = {name: value for name, value in arguments.items() if name in wanted}
        omitted = sorted(redact_text(name) for name in arguments if name not in wanted)
    redacted, paths = redact(shown, keep_hidden=keep_hidden)
    return ReviewSnapshot(
        tool_name=tool_name,
        arguments=redacted,
        redacted_paths=paths,
        digest=digest,
        omitted_fields=omitted,
    )


def carried_redactions(
    previous: ReviewSnapshot, before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[str]:
    """The paths `previous` (the snapshot of `before`) hid that hold the same value in
    `after`: they stay hidden in the snapshot of `after`. A value someone replaced is
    judged on its own."""
    if not previous.redacted_paths:
        return []
    old = values_at_paths(before, previous.redacted_paths)
    new = values_at_paths(after, previous.redacted_paths)
    return [path for path, value in old.items() if path in new and _same(new[path], value)]


def _same(first: Any, second: Any) -> bool:
    try:
        return canonical_arguments({"v": first}) == canonical_arguments({"v": second})
    except InputError:
        return False


def arguments_json(arguments: Mapping[str, Any], *, indent: int | None = 2) -> str:
    """JSON of `arguments` (pretty, or on one line with `indent=None`) with every hiding
    character as its JSON escape: what a person reads and edits means exactly these
    arguments (it parses back to them)."""
    text = json.dumps(dict(arguments), indent=indent, sort_keys=True, ensure_ascii=False)
    return _make_visible(text, fences=False) if _needs_care(text) else text


def visible(text: str) -> str:
    """A single string with its hiding characters, line breaks and backslashes written
    as JSON escapes (`a\\u202eb`); Slack markup is left to the caller."""
    if text.isprintable() and "\\" not in text and not _EXTRA_BLANKS.search(text):
        return text
    return "".join(_json_escape(char) if char == "\\" or _hides(char) else char for char in text)


# -- hiding characters ----------------------------------------------------------------

# Printable to Python, but blank or invisible on screen, or changing the look of the
# character before them: fillers, invisible marks, variation selectors, braille blank.
_EXTRA_BLANKS = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)
_BACKTICK_ESCAPE = "\\u0060"


def _hides(char: str) -> bool:
    """Control, format, separator (but the space), private-use and unassigned
    characters (str.isprintable is False for exactly those), and the extra blanks."""
    return not char.isprintable() or _EXTRA_BLANKS.match(char) is not None


@functools.lru_cache(maxsize=512)
def _json_escape(char: str) -> str:
    """`\\u202e`, or a surrogate pair past the BMP, or JSON's short form (`\\n`)."""
    return json.dumps(char)[1:-1]


def _needs_care(text: str) -> bool:
    """Whether `text` (JSON or notes, whose line breaks are structure) holds a hiding
    character or a code fence: most texts do not, and skip the character walk."""
    if "```" in text:
        return True
    printable = text.replace("\n", "").isprintable()
    if text.isascii():  # the extra blanks are all outside ASCII
        return not printable
    return not printable or _EXTRA_BLANKS.search(text) is not None


def _pieces(text: str, *, fences: bool = True) -> list[str]:
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
        pieces.append(_json_escape(char) if char != "\n" and _hides(char) else char)
    return pieces


def _make_visible(text: str, *, fences: bool = True) -> str:
    return "".join(_pieces(text, fences=fences))


# -- mixed scripts --------------------------------------------------------------------

_TOKEN = re.compile(r"\w+")
_NEUTRAL_LETTERS = frozenset({"MODIFIER", "FEMININE", "MASCULINE"})
_MIXES_THAT_ARE_ONE_WRITING = (
    frozenset({"Han", "Kana"}),  # Japanese
    frozenset({"Han", "Hangul"}),  # Korean
)


def _mixed_script_tokens(value: Any, path: str) -> Any:
    """(path, token, scripts) for each token mixing scripts, in keys and values."""
    if isinstance(value, str):
        yield from ((path, token, scripts) for token, scripts in _mixed_in(value))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            child = child_path(path, key)
            if isinstance(key, str):
                yield from ((child, token, scripts) for token, scripts in _mixed_in(key))
            yield from _mixed_script_tokens(item, child)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _mixed_script_tokens(item, f"{path}[{index}]")


def _mixed_in(text: str) -> list[tuple[str, list[str]]]:
    if text.isascii():
        return []
    found = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token.isascii():
            continue
        scripts = {_script(char) for char in token if char.isalpha()} - {None}
        if len(scripts) > 1 and not any(scripts <= one for one in _MIXES_THAT_ARE_ONE_WRITING):
            found.append((token, sorted(str(script) for script in scripts)))
    return found


@functools.lru_cache(maxsize=4096)
def _script(letter: str) -> str | None:
    """The script of a letter, from its Unicode name ("CYRILLIC SMALL LETTER A")."""
    if letter.isascii():
        return "Latin"
    words = unicodedata.name(letter, "").split()
    if not words or words[0] in _NEUTRAL_LETTERS:
        return None
    first = words[0]
    if first == "CJK":
        return "Han"
    if first.startswith(("HIRAGANA", "KATAKANA")):
        return "Kana"
    return first.capitalize()


def _pointed_out(token: str) -> str:
    """The token with every character outside ASCII as its escape, so the odd one is seen."""
    return "".join(char if char.isascii() else _json_escape(char) for char in token)


# -- fitting into Slack ---------------------------------------------------------------

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}  # "&" first: the others add one


def _escape(text: str, *, care: bool | None = None) -> str:
    """Hiding characters and fences made visible (`care`: whether `text` needs that, when
    the caller knows), then Slack's three control characters."""
    if care if care is not None else _needs_care(text):
        text = _make_visible(text)
    for char, entity in _ESCAPES.items():
        text = text.replace(char, entity)
    return text


def _slack_length(text: str) -> int:
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


def _fit(raw: str, budget: int) -> str:
    """Escape `raw`, cutting it (with a marker) so the result is at most `budget` long.

    The cut is made in the raw text before escaping, so no escape sequence (Slack's or
    a visible `\\u202e`) is ever split, and it steps back over combining marks so a
    character keeps its accents.
    """
    # Every character costs at least 1, so only the first `budget + 1` can matter.
    head = raw[: budget + 1]
    care = _needs_care(head)
    if care:
        costs = list(accumulate(_piece_cost(piece) for piece in _pieces(head)))
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
    return not _hides(char) and (
        unicodedata.combining(char) != 0 or unicodedata.category(char) == "Mn"
    )
