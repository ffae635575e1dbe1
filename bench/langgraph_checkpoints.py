"""Where a LangGraph run's checkpoints live: the two options, measured.

    python bench/langgraph_checkpoints.py            # 1, 5 and 20 tool turns before the pause
    python bench/langgraph_checkpoints.py --quick    # fewer samples

A graph runs k turns of a status call (a result of about 2 KB each) and then pauses on a
deploy that needs approval; then it is resumed, approved, to its answer. Both options
seal what they store with the store's AES-GCM and write it through the store's one
write path (a run row's compare-and-set), and read it back to resume:

- per checkpoint: a checkpointer on the store (LangGraph's checkpointer interface:
  every `put` and `put_writes` the graph makes, one per super-step and per task's
  writes, is serialised and written as a sealed row, as a store-backed saver would);
- in the run's state (what bot.adapters.langgraph does): the graph checkpoints into an
  in-memory saver; at the pause the thread's latest checkpoint is serialised into the
  run's state, which is written once, sealed, with the pending calls.

Printed per k: sealed writes per run, bytes written per run, and median wall ms of the
run to its pause plus the resume to its answer (samples interleaved).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from bot.adapters.langgraph.checkpoint import latest, saver_with
from bot.adapters.langgraph.ops import review
from bot.runtime import EngineInfo, ExternalRunState
from store import open_store

TURNS = (1, 5, 20)
STATUS = "api: healthy, 3/3 replicas ready, p99 41ms, last deploy 1.4.2. " * 32  # ~2 KB


def graph_of(turns: int, saver: Any) -> Any:
    @tool
    def get_status(service: str) -> str:
        """Report a service's health."""
        return STATUS

    @tool
    def deploy_release(service: str, version: str) -> str:
        """Deploy a release."""
        return "deployed"

    def agent(state: MessagesState) -> dict[str, Any]:
        done = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        if done < turns:
            ask = {"name": "get_status", "args": {"service": "api"}, "id": f"s{done}"}
        elif done == turns:
            ask = {"name": "deploy_release", "args": {"service": "api", "version": "1.4.2"}}
            ask["id"] = "d"
        else:
            return {"messages": [AIMessage(content="done")]}
        return {"messages": [AIMessage(content="", tool_calls=[{**ask, "type": "tool_call"}])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([get_status, deploy_release], awrap_tool_call=review))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


class Rows:
    """Sealed rows through the store's write path: one run row per thread, rewritten
    (compare-and-set) at each write; counts the writes and the bytes."""

    def __init__(self, store: Any, run_id: str) -> None:
        self.store, self.run_id, self.writes, self.bytes, self.run = store, run_id, 0, 0, None
        self.lock = asyncio.Lock()  # LangGraph saves checkpoints from concurrent tasks

    async def write(self, text: str) -> None:
        async with self.lock:
            await self._write(text)

    async def _write(self, text: str) -> None:
        self.writes += 1
        self.bytes += len(text)
        if self.run is None:
            self.run = await self.store.create_run(
                run_id=self.run_id, agent_name="bench", agent_version="1",
                schema_version="bench", state_json=text, status="paused",
            )  # fmt: skip
            return
        self.run = await self.store.save_run_state(
            self.run_id, expected_version=self.run.version, state_json=text,
            status="paused", schema_version="bench",
        )  # fmt: skip

    async def read(self) -> str:
        return str(await self.store.load_run_state(self.run_id))


class StoreSaver(InMemorySaver):
    """Option one: every checkpoint and every task's writes also written, sealed, to the
    store (a store-backed checkpointer's writes; reads are served from memory here,
    which favours this option)."""

    def __init__(self, rows: Rows) -> None:
        super().__init__()
        self.rows = rows

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        saved = await super().aput(config, checkpoint, metadata, new_versions)
        await self.rows.write(_sealable(self, checkpoint))
        return saved

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        await super().aput_writes(config, writes, task_id, task_path)
        await self.rows.write(_sealable(self, list(writes)))


def _sealable(saver: InMemorySaver, value: Any) -> str:
    kind, data = saver.serde.dumps_typed(value)
    return f'{{"kind": "{kind}", "data": "{base64.b64encode(data).decode()}"}}'


async def per_checkpoint(store: Any, turns: int, sample: int) -> tuple[int, int]:
    rows = Rows(store, f"a-{turns}-{sample}")
    config: Any = {"configurable": {"thread_id": rows.run_id}}
    graph = graph_of(turns, StoreSaver(rows))
    await graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)
    await rows.read()  # a resume in another process starts by reading the thread back
    interrupt = (await graph.aget_state(config)).interrupts[0]
    await graph.ainvoke(Command(resume={interrupt.id: {"type": "approve"}}), config)
    return rows.writes, rows.bytes


async def in_run_state(store: Any, turns: int, sample: int) -> tuple[int, int]:
    rows = Rows(store, f"b-{turns}-{sample}")
    config: Any = {"configurable": {"thread_id": rows.run_id}}
    saver = InMemorySaver()
    await graph_of(turns, saver).ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)
    state = ExternalRunState(
        run_id=rows.run_id, agent_name="bench", agent_version="1",
        engine=EngineInfo(name="langgraph", version="bench", schema_version="bench"),
        engine_state={"checkpoint": latest(saver, thread_id=rows.run_id)},
    )  # fmt: skip
    await rows.write(state.to_json())
    restored = ExternalRunState.from_json(await rows.read())
    again = saver_with(restored.engine_state["checkpoint"], thread_id=rows.run_id)
    graph = graph_of(turns, again)
    interrupt = (await graph.aget_state(config)).interrupts[0]
    await graph.ainvoke(Command(resume={interrupt.id: {"type": "approve"}}), config)
    final = ExternalRunState.from_json(state.to_json())
    final.engine_state = {"checkpoint": latest(again, thread_id=rows.run_id)}
    await rows.write(final.to_json())  # the answered run's state, written once more
    return rows.writes, rows.bytes


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    samples = 5 if parser.parse_args(argv).quick else 15
    header = (
        f"{'turns':>5} | {'per checkpoint: writes':>22} {'KB':>7} {'ms':>7} | "
        f"{'in run state: writes':>20} {'KB':>6} {'ms':>6} | {'ms ratio':>8}"
    )
    print("pause + resume of one run, sealed writes through the store (median wall ms)")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as directory:
        store = await open_store(str(Path(directory) / "bench.db"), environ={})
        try:
            for turns in TURNS:
                a_times, b_times, ratios = [], [], []
                for sample in range(samples):
                    start = time.perf_counter()
                    a_writes, a_bytes = await per_checkpoint(store, turns, sample)
                    middle = time.perf_counter()
                    b_writes, b_bytes = await in_run_state(store, turns, sample)
                    end = time.perf_counter()
                    a_times.append(middle - start)
                    b_times.append(end - middle)
                    ratios.append((middle - start) / (end - middle))
                print(
                    f"{turns:>5} | {a_writes:>22} {a_bytes / 1000:>7,.0f} "
                    f"{statistics.median(a_times) * 1e3:>7.1f} | {b_writes:>20} "
                    f"{b_bytes / 1000:>6,.0f} {statistics.median(b_times) * 1e3:>6.1f} | "
                    f"{statistics.median(ratios):>7.2f}x",
                    flush=True,
                )
        finally:
            await store.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
