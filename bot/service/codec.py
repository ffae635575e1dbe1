"""A run's state (RunState, or another engine's ExternalRunState) <-> JSON text, off the
event loop when the state is large.

Decoding a multi-megabyte state (orjson, then the state's validation in Python) blocks
the loop for milliseconds per megabyte, which would stall every Slack ack in the
process; the store already encrypts and decrypts off the loop. Both directions follow
the one rule of `bot.off_loop`: inline below `OFF_LOOP_BYTES`, in a worker thread above.

The size of a decode is the length of the JSON text. An encode has no text yet, so its
size is estimated: the characters of the history's message contents and tool results,
one pass over the items without recursion. That is what grows (tool output, long
answers) and a lower bound of the JSON's length, so a state this estimate finds large is
large. It can only err on the small side (a state whose bulk is tool-call arguments or
the context), and there the cost of erring is low: encoding is one orjson call, several
times cheaper per byte than decoding (bench/service_codec.py, 2 MiB: encode inline under
1 ms, decode 4 to 13 ms on a busy machine), so a state the estimate misses stalls the
loop less than a decode at the threshold does.
"""

from __future__ import annotations

from bot.off_loop import OFF_LOOP_BYTES, off_loop_if_large
from bot.runtime import AgentRun, RunState, read_run_state


async def decode_state(text: str) -> AgentRun:
    return await off_loop_if_large(len(text), lambda: read_run_state(text))


async def encode_state(state: AgentRun) -> str:
    return await off_loop_if_large(encoded_size_estimate(state), state.to_json)


def encoded_size_estimate(state: AgentRun) -> int:
    """A lower bound of `len(state.to_json())`: the history's text contents. Another
    engine's state is opaque here: it is encoded off the loop whatever its size."""
    if not isinstance(state, RunState):
        return OFF_LOOP_BYTES
    total = 0
    for item in state.history:
        content = item.get("content")
        if isinstance(content, str):
            total += len(content)
    return total
