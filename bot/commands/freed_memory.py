"""Giving freed heap memory back to the system while the bot serves.

glibc's malloc keeps the pages of freed blocks in its heap for later use and returns
only the heap's top to the system. A soak of `serve` on Postgres at 20 runs/s
(bench/soak.py, with malloc's own counters sampled every 30 s) showed the bytes in use
flat at 15.5 MiB from the fourth minute on, while the free bytes malloc kept grew from
7 to 12 MiB in eight minutes, and the resident size with them: long-lived blocks (the
bounded caches, the pools) sit between freed ones, so the top never frees. `malloc_trim(0)`
hands back every whole free page, wherever it is in the heap. `serve` calls it once a
minute in a worker thread (ctypes lets the GIL go for the call; it takes a few
milliseconds on such a heap). Where the C library is not glibc there is nothing to call
and nothing runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
from collections.abc import AsyncIterator, Callable

from bot.tasks import TaskOwner

log = logging.getLogger(__name__)

TRIM_EVERY_SECONDS = 60.0

Trim = Callable[[], object]


def heap_trimmer() -> Trim | None:
    """glibc's `malloc_trim(0)` as a function, or None where there is no glibc."""
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the symbols the process already has
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


@contextlib.asynccontextmanager
async def returning_freed_memory(
    *, every_seconds: float = TRIM_EVERY_SECONDS, trim: Trim | None = None
) -> AsyncIterator[None]:
    """Inside the block, `trim` (default: `heap_trimmer()`) runs every `every_seconds`;
    the task ends with the block."""
    trim = trim if trim is not None else heap_trimmer()
    if trim is None:
        yield
        return
    tasks = TaskOwner(logger=log)
    tasks.spawn(_trimming(trim, every_seconds), name="freed-memory")
    try:
        yield
    finally:
        await tasks.aclose()


async def _trimming(trim: Trim, every_seconds: float) -> None:
    while True:
        await asyncio.sleep(every_seconds)  # the cadence, not a wait for an event
        await asyncio.to_thread(trim)
