"""The policy keys that wave a call through without a fresh person's look: time-boxed
standing approvals (`allow_window`, `window_match`) and audit-only tools (`mode`).

    [tools.restart_service]
    allow_window = "2h"          # "approve matching calls for the next 2h" (default: not offered)
    window_match = ["service"]   # argument fields that must be equal (default: none, any call)

    [tools.read_logs]
    mode = "audit"               # runs without waiting; a card records it after the fact

A window is one person's decision, so it is refused with `required_approvals` > 1; it
lasts at most WINDOW_CEILING. An audit-only tool is never waited on, so a standing
decision or a window on it would decide nothing: refused together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Literal

from bot.policy.durations import format_duration, parse_duration

Mode = Literal["approve", "audit"]
MODES: tuple[Mode, ...] = ("approve", "audit")
WINDOW_KEYS = frozenset({"allow_window", "window_match", "mode"})
WINDOW_CEILING = timedelta(hours=24)
"""The longest window: a standing approval is for a stretch of work, not for good."""
MAX_MATCH_FIELDS = 10
MAX_FIELD_CHARS = 100

Fail = Callable[[str, str], None]


def read_window(table: Mapping[str, Any], prefix: str, fail: Fail) -> dict[str, Any]:
    """The window and mode keys `table` sets, as ToolRule fields (a bad value is reported
    through `fail` and left out)."""
    fields: dict[str, Any] = {}
    if "allow_window" in table:
        try:
            fields["allow_window"] = parse_duration(table["allow_window"], longest=WINDOW_CEILING)
        except ValueError as error:
            fail(f"{prefix}.allow_window", str(error))
    if "window_match" in table:
        match = _match_fields(table["window_match"], f"{prefix}.window_match", fail)
        if match is not None:
            fields["window_match"] = match
    if "mode" in table:
        if table["mode"] in MODES:
            fields["mode"] = table["mode"]
        else:
            fail(
                f"{prefix}.mode",
                f'must be "approve" (the default) or "audit", not {table["mode"]!r}',
            )
    return fields


def _match_fields(value: object, key: str, fail: Fail) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        fail(key, "must be a list of argument names (strings)")
        return None
    if len(value) > MAX_MATCH_FIELDS:
        fail(key, f"names {len(value)} fields; at most {MAX_MATCH_FIELDS}")
        return None
    for item in value:
        if not item.strip() or len(item) > MAX_FIELD_CHARS:
            fail(key, f"{item[:40]!r} is not an argument name (1 to {MAX_FIELD_CHARS} characters)")
            return None
    if len(set(value)) != len(value):
        fail(key, "names a field twice")
        return None
    return tuple(value)


def check_window(
    table: Mapping[str, Any],
    prefix: str,
    fail: Fail,
    *,
    allow_window: timedelta | None,
    window_match: tuple[str, ...],
    allow_always: bool,
    required_approvals: int,
    mode: Mode,
) -> None:
    """Rules that could never work as written, reported where they are written."""
    written = WINDOW_KEYS & set(table) or "required_approvals" in table or "allow_always" in table
    if not written:
        return
    if window_match and allow_window is None:
        fail(
            f"{prefix}.window_match",
            "names the fields a window matches, but allow_window is not set",
        )
    if allow_window is not None and required_approvals > 1:
        fail(
            f"{prefix}.allow_window",
            f"a window is one person's decision, but this tool needs {required_approvals} "
            "approvals; allow it only where required_approvals = 1",
        )
    if mode == "audit" and (allow_window is not None or allow_always):
        key = "allow_window" if allow_window is not None else "allow_always"
        fail(
            f"{prefix}.mode",
            f"an audit-only tool is never waited on, so {key} would decide nothing; drop one",
        )


def describe_window(
    allow_window: timedelta | None, window_match: tuple[str, ...], mode: Mode
) -> str:
    """The window and mode keys as `; …` parts of `policy check`'s line for a rule."""
    parts = []
    if allow_window is not None:
        matching = f" matching {', '.join(window_match)}" if window_match else " (any arguments)"
        parts.append(f"; approval windows of {format_duration(allow_window)}{matching}")
    if mode == "audit":
        parts.append("; audit only (runs without waiting, recorded on a card)")
    return "".join(parts)
