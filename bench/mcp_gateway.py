"""The MCP gateway's cost: a call passed straight through, and a gated call's wait after
its approval.

    python bench/mcp_gateway.py [--quick] [--calls 400] [--rounds 3] [--gated 20]

A real `approvals-bot serve` process with APPROVALS_MCP (SQLite, the fake Slack Web API of
tests/slack/fake_slack.py served by this process), fronting the stdio upstream of
tests/mcp/upstream.py, which it starts itself.

1. Pass-through. `ops__status` (read-only: the file lets it through) called one after
   another through the gateway by a real MCP client session over Streamable HTTP, on the
   2026 protocol and on the 2025 handshake, against the floor: the same tool called
   directly on its own stdio upstream by the same SDK client. Rounds alternate them so
   that the machine's noise falls on all. Target: the gateway's p50 within 1.5x the
   direct p50 plus 2 ms. A fourth client posts the same 2026 request with plain aiohttp
   (one JSON-RPC POST, no MCP client library): the gap between it and the SDK's session
   is the SDK's Streamable HTTP client, which the gateway does not control.
2. Gated. `ops__deploy` waiting for a person; the person approves (the signed modal
   submission, as Slack sends it) and the time to the result is measured twice: at the
   client, from sending the submission to the result (two local HTTP hops included), and
   in the server, from the `decided` audit event to the `mcp_result` one (the resume, the
   last look at the tool's definition upstream, the call itself, the ledger, waking the
   waiting request and reading the sealed result). No target: the figures are for
   operators (a person's decision takes seconds; this is what the bot adds after it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
from mcp import Client, StdioServerParameters
from slack_load import percentile  # puts the repository on sys.path

from tests.mcp.harness import ROOT, Setup, decide, mcp_session, next_card, start_gateway
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_driver import SlackDriver

Call = Callable[[], Awaitable[Any]]


async def _timed(call: Call, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return times


def _line(name: str, times: list[float]) -> str:
    return (
        f"  {name:<22} p50 {statistics.median(times) * 1000:6.2f} ms   "
        f"p99 {percentile(times, 0.99) * 1000:6.2f} ms   (n={len(times)})"
    )


def _plain_call(session: aiohttp.ClientSession, url: str, token: str) -> Call:
    """The 2026 `tools/call` of ops__status as one POST (what the SDK's session sends)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "ops__status",
            "arguments": {"service": "api"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "ops__status",
    }

    async def call() -> Any:
        async with session.post(url, json=body, headers=headers) as response:
            assert response.status == 200, await response.text()
            return await response.read()

    return call


async def pass_through(url: str, token: str, setup: Setup, *, calls: int, rounds: int) -> bool:
    direct_server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.mcp.upstream"],
        env={"UPSTREAM_EFFECTS": str(setup.effects_file), "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    arguments = {"service": "api"}
    names = ("direct (stdio)", "gateway, 2026", "gateway, 2025", "gateway, plain HTTP")
    found: dict[str, list[float]] = {name: [] for name in names}
    async with (
        Client(direct_server, cache=None) as direct,
        mcp_session(url, token, mode="auto") as modern,
        mcp_session(url, token, mode="legacy") as legacy,
        aiohttp.ClientSession() as plain,
    ):
        clients: dict[str, Call] = {
            "direct (stdio)": lambda: direct.call_tool("status", arguments),
            "gateway, 2026": lambda: modern.call_tool("ops__status", arguments),
            "gateway, 2025": lambda: legacy.call_tool("ops__status", arguments),
            "gateway, plain HTTP": _plain_call(plain, url, token),
        }
        for call in clients.values():
            await _timed(call, 30)  # warm up
        for _ in range(rounds):
            for name, call in clients.items():
                found[name] += await _timed(call, calls // rounds)
    print("1. pass-through (a read-only tool, one call at a time)")
    for name, times in found.items():
        print(_line(name, times))
    floor = statistics.median(found["direct (stdio)"])
    ok = True
    for name in names[1:]:
        p50 = statistics.median(found[name])
        target = 1.5 * floor + 0.002
        verdict = "meets" if p50 <= target else "MISSES"
        ok = ok and p50 <= target
        print(
            f"  {name}: p50 {p50 / floor:.2f}x the direct p50, +{(p50 - floor) * 1000:.2f} ms; "
            f"{verdict} the target (<= {target * 1000:.2f} ms)"
        )
    return ok


async def gated(
    url: str, token: str, fake: FakeSlack, driver: SlackDriver, workdir: Path, *, count: int
) -> None:
    at_client: list[float] = []
    async with mcp_session(url, token, mode="auto") as client:
        for number in range(count):
            deploy = {"service": "api", "version": f"1.0.{number}"}
            call = asyncio.create_task(client.call_tool("ops__deploy", deploy))
            card = await next_card(fake, count=number + 1)
            started = time.perf_counter()
            await decide(fake, driver, card, "Approve")
            result = await call
            at_client.append(time.perf_counter() - started)
            assert not result.is_error, result
    in_server = _decided_to_handed_out(workdir / "approvals.db")
    print(f"2. gated: approve -> result ({count} calls, one at a time)")
    print(_line("at the client", at_client))
    print(_line("in the server", in_server))


def _decided_to_handed_out(database: Path) -> list[float]:
    """Per run: from its `decided` audit event to its `mcp_result` one (server clock)."""
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            "SELECT run_id, kind, at FROM audit_events WHERE kind IN ('decided', 'mcp_result')"
        ).fetchall()
    moments: dict[str, dict[str, datetime]] = {}
    for run_id, kind, at in rows:
        moments.setdefault(run_id, {})[kind] = datetime.fromisoformat(at)
    return [
        (times["mcp_result"] - times["decided"]).total_seconds()
        for times in moments.values()
        if {"decided", "mcp_result"} <= set(times)
    ]


async def main(calls: int, rounds: int, gated_calls: int) -> int:
    fake = FakeSlack()
    await fake.start()
    with tempfile.TemporaryDirectory() as directory:
        setup = Setup(workdir=Path(directory))
        setup.write()
        served, url = await start_gateway(setup.env(fake, LOG_LEVEL="WARNING"))
        try:
            ok = await pass_through(url, setup.token, setup, calls=calls, rounds=rounds)
            async with aiohttp.ClientSession() as session:
                driver = served.driver(session, fake)
                await gated(url, setup.token, fake, driver, setup.workdir, count=gated_calls)
        finally:
            await served.stop()
            await fake.close()
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=400, help="pass-through calls per client")
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds")
    parser.add_argument("--gated", type=int, default=20, help="gated calls approved")
    parser.add_argument("--quick", action="store_true", help="a smaller run")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.rounds, args.gated = 120, 2, 5
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(asyncio.run(main(args.calls, args.rounds, args.gated)))
