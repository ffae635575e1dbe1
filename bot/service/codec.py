"""RunState <-> JSON text, off the event loop when the state is large.

Encoding or decoding a multi-megabyte state blocks the loop for hundreds of
milliseconds (measured in the store issue), which would stall every Slack ack in the
process. Small states (the usual case) are cheaper to convert inline than to hand to a
thread, so only those above a threshold go to `asyncio.to_thread`. The store already
encrypts and decrypts off the loop; this covers the JSON conversion the service does.
"""

from __future__ import annotations

import asyncio

from bot.runtime import RunState

OFFLOAD_TEXT_CHARS = 128 * 1024
"""Decode in a worker thread when the JSON text is at least this long."""

OFFLOAD_HISTORY_ITEMS = 200
"""Encode in a worker thread when the state holds at least this many history items."""


async def decode_state(text: str) -> RunState:
    if len(text) >= OFFLOAD_TEXT_CHARS:
        return await asyncio.to_thread(RunState.from_json, text)
    return RunState.from_json(text)


async def encode_state(state: RunState) -> str:
    if len(state.history) >= OFFLOAD_HISTORY_ITEMS:
        return await asyncio.to_thread(state.to_json)
    return state.to_json()
