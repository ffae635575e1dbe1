"""Waiting on a condition another process or task brings about: poll with a deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
WAIT_SECONDS = 40.0
POLL_SECONDS = 0.02


async def until(
    check: Callable[[], Awaitable[T | None]], what: str, *, seconds: float = WAIT_SECONDS
) -> T:
    """Poll `check` until it returns something, within `seconds` (AssertionError naming
    `what` when it never does)."""
    try:
        async with asyncio.timeout(seconds):
            while True:
                found = await check()
                if found is not None:
                    return found
                await asyncio.sleep(POLL_SECONDS)  # a poll step, under the deadline
    except TimeoutError:
        raise AssertionError(what) from None
