"""The one clock type and its default: timezone-aware UTC now.

Every layer that stamps or compares times (the store's rows, the service's expiry and
reminders) takes a `Clock`, so tests can drive time without sleeping.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["Clock", "utc_now"]

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)
