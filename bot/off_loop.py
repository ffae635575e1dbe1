"""CPU work that is too large for the event loop runs in a worker thread.

Encoding, hashing or sealing a multi-megabyte run state blocks the loop for a noticeable
time, which would stall every Slack acknowledgement in the process. Small inputs (the
usual case) are cheaper to handle inline than to hand to a thread, so only work whose
input crosses one threshold goes to `asyncio.to_thread`. The service (JSON conversion)
and the store (encoding, hashing, AES-GCM) use the same rule.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

__all__ = ["OFF_LOOP_BYTES", "off_loop_if_large"]

T = TypeVar("T")

OFF_LOOP_BYTES = 256 * 1024
"""Work on inputs at least this large (bytes, or characters of JSON text) leaves the loop."""


async def off_loop_if_large(size: int, work: Callable[[], T]) -> T:
    """Run `work` inline when `size` is small, in a worker thread when it is large."""
    if size >= OFF_LOOP_BYTES:
        return await asyncio.to_thread(work)
    return work()
