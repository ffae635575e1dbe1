"""Durations as policies and operators write them: "30s", "90m", "2h", "1d"."""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION = re.compile(r"(\d{1,9})\s*([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Expiry and reminder times are `now + duration`: a longer one would overflow a datetime
# when the first approval is requested, long after the policy was accepted.
_LONGEST_DURATION = timedelta(days=3650)


def format_duration(duration: timedelta) -> str:
    """A duration as the policy writes it: "2h", "90m", "1d", "0s"."""
    seconds = int(duration.total_seconds())
    for unit in ("d", "h", "m"):
        if seconds and seconds % _UNIT_SECONDS[unit] == 0:
            return f"{seconds // _UNIT_SECONDS[unit]}{unit}"
    return f"{seconds}s"


def parse_duration(
    text: object, *, allow_zero: bool = False, longest: timedelta | None = _LONGEST_DURATION
) -> timedelta:
    """ "30s", "90m", "2h", "1d" (a whole number of at most nine digits, then the unit)
    -> timedelta; ValueError (a message for people) else. Policy times are at most
    `longest` (ten years); an operator's look-back (`--since 7d`) passes None."""
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            f'{text!r} is not a duration; write a whole number and a unit: "30s", "90m", '
            '"2h" or "1d"'
        )
    duration = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    if not duration and not allow_zero:
        raise ValueError("must be longer than zero")
    if longest is not None and duration > longest:
        raise ValueError(f"{text!r} is too long; write at most {longest.days}d")
    return duration
