"""How long a large RunState blocks the event loop: inline JSON against the service codec.

    python bench/service_codec.py [--mib 2] [--rounds 5]
    python bench/service_codec.py --quick    # a 0.5 MiB state, 2 rounds

A paused state of about `--mib` MiB is decoded and encoded (a) inline on the event loop,
as a naive service would, and (b) through `bot.service.codec`, which hands large states
to a worker thread. Meanwhile a ticker task sleeps 1 ms at a time and records the longest
gap between its wake-ups: that gap is how long every other coroutine (a Slack ack, a
decision) would have waited. Reported: median over rounds of the longest gap, and of the
wall time of the conversion. Exits non-zero only when something crashes.

What to expect: the thread hand-off bounds the Python part of the work (validation) by
the interpreter's switch interval, but the JSON parse itself is one C call that holds the
GIL, so the longest stall shrinks (about half, measured) rather than vanishing. States
that large are a sign the history needs compacting; a process pool would be the next step.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bot.runtime import RunState
from bot.service import codec

TICK_SECONDS = 0.001


def build_state(mib: float) -> RunState:
    history: list[Any] = [{"type": "user", "content": "deploy payments 1.2.3"}]
    chunk = "log line " * 100  # ~900 characters of tool output per result
    per_turn = len(chunk) + 200  # the result plus the call item, roughly, as JSON
    turns = int(mib * 1024 * 1024 / per_turn)
    for turn in range(turns):
        call_id = f"call_{turn}"
        history.append(
            {
                "type": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "name": "get_status", "arguments": {"s": "api"}}],
            }
        )
        history.append(
            {
                "type": "tool_result",
                "tool_call_id": call_id,
                "name": "get_status",
                "content": chunk,
                "is_error": False,
            }
        )
    return RunState(run_id="bench", agent_name="ops", agent_version="1", history=history)


async def longest_stall(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """(longest gap between ticker wake-ups, wall time of `work`), in seconds."""
    stop = asyncio.Event()
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(TICK_SECONDS)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    await work()
    elapsed = time.perf_counter() - started
    stop.set()
    await task
    return max(gaps), elapsed


async def inline_decode(text: str) -> RunState:
    return RunState.from_json(text)


async def inline_encode(state: RunState) -> str:
    return state.to_json()


async def main(mib: float, rounds: int) -> None:
    state = build_state(mib)
    text = state.to_json()
    print(f"state: {len(text) / 1024 / 1024:.2f} MiB JSON, {len(state.history)} history items")
    cases: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("decode inline", lambda: inline_decode(text)),
        ("decode codec ", lambda: codec.decode_state(text)),
        ("encode inline", lambda: inline_encode(state)),
        ("encode codec ", lambda: codec.encode_state(state)),
    ]
    results: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in cases}
    for _ in range(rounds):
        for name, work in cases:
            results[name].append(await longest_stall(work))
    print(f"{'case':<14} {'longest loop stall':>20} {'conversion time':>17}")
    for name, samples in results.items():
        stall = statistics.median(s for s, _ in samples) * 1000
        wall = statistics.median(w for _, w in samples) * 1000
        print(f"{name:<14} {stall:>17.1f} ms {wall:>14.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=None, help="state size (default 2)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 5)")
    parser.add_argument("--quick", action="store_true", help="a 0.5 MiB state, 2 rounds")
    options = parser.parse_args()
    mib = options.mib if options.mib is not None else (0.5 if options.quick else 2.0)
    rounds = options.rounds if options.rounds is not None else (2 if options.quick else 5)
    asyncio.run(main(mib, rounds))
