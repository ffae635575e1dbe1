"""RunState serialization: ours against the orjson floor and the agent frameworks' own.

    python bench/runstate.py            # sizes 10, 100, 1000 history items
    python bench/runstate.py --quick    # fewer samples

Each size is a real paused run: k model turns that each called a tool needing no
approval (a tool call and its result per turn), then a turn whose call needs approval.
Both runtimes build it through their public API with a scripted model, so the content is
equivalent (same tool names, arguments and results).

Measured per size, as the median of repeated samples of this thread's CPU time (the
machine may be busy), ours and the floor interleaved sample by sample:
- floor: `orjson.dumps` / `orjson.loads` of our state's dict (what JSON alone costs);
- ours: `RunState.to_json()` / `RunState.from_json()` (validation included);
- SDK: OpenAI Agents SDK `RunState.to_string()` / `await RunState.from_string(agent, s)`,
  when `openai-agents` is installed (the `bench` extra); skipped otherwise.

Targets: our round trip <= 3x the floor, >= 10x faster than the SDK.

A second table, a column per agent framework installed (bench/paused_states.py: the
OpenAI Agents SDK, LangGraph, Pydantic AI), measures what the bot adds around that
framework's paused state: `ExternalRunState.to_json()`, the store's seal (AES-GCM) and
write, its read and open, and `read_run_state` (wall time: the store's writer is another
thread), against the framework's own serialisation round trip of the same state (the
SDK's `to_string()` + `from_string()`; LangGraph's checkpoint serializer `dumps_typed` +
`loads_typed` of the checkpoint and its pending writes; Pydantic AI's
`ModelMessagesTypeAdapter.dump_json` + `validate_json` of the message history), at about
14 KB, 100 KB and 1 MB of the framework's own bytes (a tool result of growing size),
interleaved sample by sample; the ratio is the median of per-sample ratios (lower: the
bot adds less).

Prints the tables; exits non-zero only when something crashes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from paused_states import Builder, Paused, installed, sized

from bot.runtime import Agent, Runner, RunState, ScriptedModel, tool

SIZES = (10, 100, 1000)
RESULT_TEXT = "api: healthy, 3/3 replicas ready, p99 41ms, last deploy 1.4.1 (2 days ago)"


@dataclass(frozen=True, kw_only=True)
class Timing:
    to_json: float
    from_json: float

    @property
    def round_trip(self) -> float:
        return self.to_json + self.from_json


def turns_for(size: int) -> int:
    """Turns k such that user + k*(call, result) + the pending call = size items."""
    return max(0, (size - 2) // 2)


def per_call_seconds(action: Callable[[], Any], number: int) -> float:
    """CPU time of this thread per call: other processes on a busy machine do not count."""
    start = time.thread_time()
    for _ in range(number):
        action()
    return (time.thread_time() - start) / number


def calibrate(action: Callable[[], Any], target: float = 0.005) -> int:
    """How many calls make one sample last about `target` seconds."""
    number = 1
    while per_call_seconds(action, number) * number < target and number < 10_000:
        number *= 2
    return number


async def per_await_seconds(action: Callable[[], Awaitable[Any]]) -> float:
    start = time.thread_time()
    await action()
    return time.thread_time() - start


# -- ours -----------------------------------------------------------------------------


async def our_paused_state(size: int) -> RunState:
    @tool
    def get_status(service: str) -> str:
        """Report a service's health."""
        return RESULT_TEXT

    @tool(needs_approval=True, replay_policy="idempotent")
    def deploy_release(service: str, version: str) -> str:
        """Deploy a release."""
        return "deployed"

    k = turns_for(size)
    script: list[Any] = [[("get_status", {"service": f"api-{i}"})] for i in range(k)]
    script.append([("deploy_release", {"service": "api", "version": "1.4.2"})])
    agent = Agent(
        name="ops",
        instructions="You operate services.",
        tools=[get_status, deploy_release],
        model=ScriptedModel(script),
    )
    result = await Runner.arun(agent, "check every api, then deploy api 1.4.2", max_turns=k + 2)
    assert result.outcome == "paused", result.outcome
    assert len(result.state.history) == 2 * k + 2
    return result.state


def measure_ours(state: RunState, *, samples: int) -> tuple[Timing, Timing, float]:
    """Floor and ours, interleaved sample by sample so both see the same machine load;
    also the median of the per-sample round-trip ratios."""
    payload = state.to_dict()
    encoded = orjson.dumps(payload)
    text = state.to_json()
    actions = {
        "floor_to": lambda: orjson.dumps(payload),
        "floor_from": lambda: orjson.loads(encoded),
        "ours_to": state.to_json,
        "ours_from": lambda: RunState.from_json(text),
    }
    numbers = {name: calibrate(action) for name, action in actions.items()}
    times: dict[str, list[float]] = {name: [] for name in actions}
    ratios = []
    for _ in range(samples):
        sample = {name: per_call_seconds(a, numbers[name]) for name, a in actions.items()}
        for name, seconds in sample.items():
            times[name].append(seconds)
        ours_round_trip = sample["ours_to"] + sample["ours_from"]
        ratios.append(ours_round_trip / (sample["floor_to"] + sample["floor_from"]))
    median = {name: statistics.median(values) for name, values in times.items()}
    floor = Timing(to_json=median["floor_to"], from_json=median["floor_from"])
    ours = Timing(to_json=median["ours_to"], from_json=median["ours_from"])
    return floor, ours, statistics.median(ratios)


# -- the OpenAI Agents SDK ------------------------------------------------------------


def sdk_available() -> bool:
    try:
        import agents  # noqa: F401
    except ImportError:
        return False
    return True


async def measure_sdk(size: int, *, samples: int) -> Timing:
    os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"  # nothing may leave this machine
    from agents import Agent as SdkAgent
    from agents import Runner as SdkRunner
    from agents import RunState as SdkRunState
    from agents import function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel as SdkScriptedModel
    from agents.testing import function_call

    set_tracing_disabled(True)

    @function_tool
    def get_status(service: str) -> str:
        """Report a service's health."""
        return RESULT_TEXT

    @function_tool(needs_approval=True)
    def deploy_release(service: str, version: str) -> str:
        """Deploy a release."""
        return "deployed"

    k = turns_for(size)
    steps: list[Any] = [
        [function_call("get_status", {"service": f"api-{i}"}, call_id=f"call_{i}_0")]
        for i in range(k)
    ]
    steps.append(
        [function_call("deploy_release", {"service": "api", "version": "1.4.2"}, call_id="c_d")]
    )
    agent = SdkAgent(
        name="ops",
        instructions="You operate services.",
        tools=[get_status, deploy_release],
        model=SdkScriptedModel(steps),
    )
    result = await SdkRunner.run(agent, "check every api, then deploy api 1.4.2", max_turns=k + 2)
    assert result.interruptions, "the SDK run did not pause for approval"
    state = result.to_state()
    text = state.to_string()
    number = calibrate(state.to_string)
    to_json = statistics.median(per_call_seconds(state.to_string, number) for _ in range(samples))
    from_times = [
        await per_await_seconds(lambda: SdkRunState.from_string(agent, text))
        for _ in range(samples)
    ]
    return Timing(to_json=to_json, from_json=statistics.median(from_times))


# -- the bot around each framework's paused state --------------------------------------

SEALED_TARGETS = (14_000, 100_000, 1_000_000)  # bytes of the framework's own serialisation


async def measure_around(paused: Paused, *, samples: int, store: Any) -> tuple[float, float, float]:
    """(the framework's own serialise-and-restore s, what the bot adds around it s:
    ExternalRunState.to_json, the store's seal and write, its read and open,
    read_run_state; the median per-sample ratio of the two), medians."""
    from bot.runtime import EngineInfo, ExternalRunState, PendingCall, read_run_state

    wrapped = ExternalRunState(
        run_id=f"bench-{paused.framework}-{paused.own_bytes}",
        agent_name="ops",
        agent_version="1",
        engine=EngineInfo(name=paused.framework, version="bench", schema_version="1"),
        engine_state=paused.engine_state,
        pending=[
            PendingCall(
                tool_call_id=paused.call_id,
                tool_name="deploy_release",
                arguments={"service": "api", "version": "1.4.2"},
                execution_key="k" * 32,
                status="approval",
            )
        ],
    )
    run = await store.create_run(
        run_id=wrapped.run_id, agent_name="ops", agent_version="1",
        schema_version=wrapped.schema_version, state_json=wrapped.to_json(), status="paused",
    )  # fmt: skip

    async def ours_around() -> None:
        nonlocal run
        run = await store.save_run_state(
            run.run_id, expected_version=run.version, state_json=wrapped.to_json(),
            status="paused", schema_version=wrapped.schema_version,
        )  # fmt: skip
        read_run_state(await store.load_run_state(run.run_id))

    await paused.own_round_trip()  # warm both up (first writes, first imports): not timed
    await ours_around()
    own, ours, ratios = [], [], []
    for _ in range(samples):
        start = time.perf_counter()
        await paused.own_round_trip()
        middle = time.perf_counter()
        await ours_around()
        end = time.perf_counter()
        own.append(middle - start)
        ours.append(end - middle)
        ratios.append((end - middle) / (middle - start))
    return statistics.median(own), statistics.median(ours), statistics.median(ratios)


async def sealed_table(samples: int, frameworks: dict[str, Builder]) -> None:
    import tempfile
    from pathlib import Path

    from store import open_store

    print()
    print(
        "the bot around a paused framework state: to_json + seal + store + load + read, "
        "against the framework's own serialise + restore of it (median of per-sample "
        "wall-time ratios; lower: the bot adds less)"
    )
    print("each cell: the framework's own ms / the bot's around it ms, ratio")
    header = f"{'own bytes':>10}" + "".join(f" | {name:>24}" for name in frameworks)
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as directory:
        store = await open_store(str(Path(directory) / "bench.db"), environ={})
        try:
            for target in SEALED_TARGETS:
                cells = []
                for build in frameworks.values():
                    paused = await sized(build, target)
                    own, ours, ratio = await measure_around(paused, samples=samples, store=store)
                    cells.append(f"{own * 1e3:.2f} / {ours * 1e3:.2f} ms, {ratio:.2f}x")
                print(f"{'~' + format(target, ','):>10}" + "".join(f" | {c:>24}" for c in cells))
        finally:
            await store.close()


# -- report ---------------------------------------------------------------------------


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args(argv)
    samples = 7 if args.quick else 21
    with_sdk = sdk_available()
    if not with_sdk:
        print("openai-agents is not installed (pip install -e '.[bench]'): SDK columns skipped")
    header = (
        f"{'items':>6} | {'floor dumps':>11} {'floor loads':>11} | {'to_json':>9} "
        f"{'from_json':>9} | {'to/floor':>8} {'from/floor':>10} {'rt/floor':>8}"
    )
    if with_sdk:
        header += f" | {'SDK to':>10} {'SDK from':>10} | {'SDK rt/ours':>11}"
    print(
        "median CPU microseconds per call; rt = round trip (to_json + from_json); "
        "rt/floor = median of per-sample ratios"
    )
    print(header)
    print("-" * len(header))
    for size in SIZES:
        state = await our_paused_state(size)
        floor, ours, round_trip_ratio = measure_ours(state, samples=samples)
        row = (
            f"{len(state.history):>6} | {_us(floor.to_json):>11} {_us(floor.from_json):>11} | "
            f"{_us(ours.to_json):>9} {_us(ours.from_json):>9} | "
            f"{ours.to_json / floor.to_json:>7.2f}x {ours.from_json / floor.from_json:>9.2f}x "
            f"{round_trip_ratio:>7.2f}x"
        )
        if with_sdk:
            sdk = await measure_sdk(size, samples=samples)
            row += (
                f" | {_us(sdk.to_json):>10} {_us(sdk.from_json):>10} | "
                f"{sdk.round_trip / ours.round_trip:>10.1f}x"
            )
        print(row, flush=True)
    print("targets: rt/floor <= 3x; SDK rt/ours >= 10x")
    frameworks = installed()
    if frameworks:
        await sealed_table(samples, frameworks)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
