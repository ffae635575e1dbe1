"""The review snapshot of one tool call: what a person reads on its card, redacted,
with the call's keyed digest, and rendered to fit a Block Kit section."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.canonical import canonical_arguments
from bot.credentials import redact, redact_text, values_at_paths
from bot.errors import InputError
from bot.review.fitting import fit, slack_length
from bot.review.mixed_scripts import mixed_script_tokens, pointed_out
from bot.review.visible import visible

SECTION_TEXT_LIMIT = 3000
"""Block Kit's limit for a section's text; `render_text` leaves room for a header."""
_MIN_RENDER_LIMIT = 200
_DIGEST = re.compile(r"[0-9a-f]{64}")
_MAX_WARNINGS = 5


@dataclass(frozen=True, kw_only=True)
class ReviewSnapshot:
    """The redacted view of one tool call, plus the digest of its real arguments.

    `notes` are lines its engine wants read beside the arguments (already redacted and
    made visible); `amendable` says whether an approver may change the arguments, when
    the engine decides that per tool (None: as its engine does for every call)."""

    tool_name: str
    arguments: dict[str, Any]
    redacted_paths: list[str]
    digest: str
    omitted_fields: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    amendable: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "redacted_paths": list(self.redacted_paths),
            "omitted_fields": list(self.omitted_fields),
            "digest": self.digest,
        }
        if self.notes:
            data["notes"] = list(self.notes)
        if self.amendable is not None:
            data["amendable"] = self.amendable
        return data

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
                notes=[str(note) for note in data.get("notes", [])],
                amendable=_optional_bool(data.get("amendable")),
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
        notes = fit("\n".join(self._notes()), limit // 4)
        tail = f"\n{notes}" if notes else ""
        body = json.dumps(self.arguments, indent=2, sort_keys=True, ensure_ascii=False)
        return fit(body, limit - slack_length(tail)) + tail

    def render_warnings(self, limit: int = 1000) -> str:
        """The script warnings as Slack-escaped lines ("" when there are none), at most
        `limit` long; the caller shows them next to the arguments."""
        return fit("\n".join(self.script_warnings()), limit) if limit > 0 else ""

    def script_warnings(self) -> list[str]:
        """One line per token of the shown arguments (keys and values) whose letters come
        from more than one script, such as `p\\u0430ypal` (a Cyrillic а), at most five."""
        found = list(mixed_script_tokens(self.arguments, "$"))
        lines = [
            f"{path}: {pointed_out(token)} mixes {' and '.join(scripts)} letters"
            for path, token, scripts in found[:_MAX_WARNINGS]
        ]
        if len(found) > _MAX_WARNINGS:
            lines.append(f"… and {len(found) - _MAX_WARNINGS} more tokens that mix scripts")
        return lines

    def _notes(self) -> list[str]:
        notes = list(self.notes)
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
    notes: Sequence[str] = (),
    amendable: bool | None = None,
) -> ReviewSnapshot:
    """Snapshot a call for review: narrow, then redact; `digest` is the call's keyed
    digest (RunState.call_digest), shown as given. `notes` (its engine's lines for the
    reviewer) are redacted and their hiding characters made visible; `amendable` is
    kept as given (see ReviewSnapshot).

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
        notes=[visible(redact_text(note)) for note in notes],
        amendable=amendable,
    )


def _optional_bool(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise TypeError("'amendable' must be true, false or absent")


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
