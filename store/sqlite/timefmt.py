"""Timestamps as fixed-width UTC text, so SQL comparisons and ORDER BY are time order."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.errors import InputError

DB_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def to_db(moment: datetime) -> str:
    """'2026-11-29T14:23:22.000000Z'; naive datetimes are refused (their zone is unknown)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InputError(f"timestamp {moment.isoformat()} has no time zone; give an aware UTC time")
    # isoformat with fixed microseconds is the same text as DB_TIME_FORMAT, 10x faster
    return moment.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def from_db(text: str) -> datetime:
    return datetime.fromisoformat(text)  # reads the trailing Z as UTC (Python >= 3.11)


def from_db_optional(text: str | None) -> datetime | None:
    return None if text is None else from_db(text)
