"""Acknowledgement time of signed decision submissions (the Approve modal's "Submit").

    python bench/ack_decisions.py [--requests 300] [--rounds 3]

A decision is committed before its submission is answered (bot.slack.interactions), so
the answer now waits for one write transaction on SQLite. This measures what that costs:
for concurrency 1, 16 and 64, N signed submissions, each approving a different pending
approval as a different person, go to

- `noop`: a Bolt app whose view_submission listener only acks (the floor), and
- `ours`: the real app (parse, commit the vote, answer; card update and resume after),

alternating within each round, on one event loop pinned to CPU 0 (as bench/ack.py; the
load and the fake Slack Web API run in other processes). Reported: p50 and p99 of the
time to the HTTP answer, median over rounds, and ours/noop. Slack waits 3 s.

To compare with the code before the change, run the same script against another
checkout: `PYTHONPATH=/path/to/other/checkout python bench/ack_decisions.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ack import LEVELS, open_surface
from slack_bolt.app.async_app import AsyncApp
from slack_load import (
    SECRET,
    LoadGenerator,
    SlackProcess,
    percentile,
    pin_to_server_cpu,
    serve,
    submission,
)

from bot.runtime import ScriptedModel
from bot.slack.decision_modal import DECISION_CALLBACK_ID
from bot.slack.server import build_web_app
from bot.slack.surface import SlackSurface

CALLS_PER_RUN = 20  # within the default limits.pending_approvals_per_run
Results = dict[str, dict[int, list[list[float]]]]


def fan_out_model() -> ScriptedModel:
    calls = [
        ("deploy_release", {"service": f"svc{index}", "version": "1.0.0"})
        for index in range(CALLS_PER_RUN)
    ]
    return ScriptedModel([calls, "Done."])


async def pending_approvals(surface: SlackSurface, count: int) -> list[str]:
    """`count` pending approvals (runs of CALLS_PER_RUN calls each), in order."""
    ids: list[str] = []
    while len(ids) < count:
        run = await surface.service.start_run(
            agent_name=None, task="deploy everything", requester="UREQ", channel="CBENCH"
        )
        rows = await surface.service.store.list_approvals(run_id=run.run_id, status="pending")
        ids.extend(row.approval_id for row in rows)
    return ids[:count]


def noop_app(surface: SlackSurface) -> AsyncApp:
    """A plain Bolt app on the same client whose decision listener only acks."""
    app = AsyncApp(
        client=surface.slack.client,
        signing_secret=SECRET,
        process_before_response=True,
        request_verification_enabled=False,
    )

    async def on_submit(ack: Callable[[], Awaitable[None]], body: dict[str, Any]) -> None:
        await ack()

    app.view(DECISION_CALLBACK_ID)(on_submit)
    return app


async def submission_levels(
    slack: SlackProcess, load: LoadGenerator, workdir: Path, requests: int, rounds: int
) -> Results:
    surface, store = await open_surface(slack, workdir / "decisions.db", model=fan_out_model())
    apps = {"noop": noop_app(surface), "ours": surface.bolt_app}
    results: Results = {name: {level: [] for level in LEVELS} for name in apps}
    servers = [
        await serve(build_web_app(bolt_app=app, signing_secret=SECRET, memory=None))
        for app in apps.values()
    ]
    urls = dict(zip(apps, (url for _, url in servers), strict=True))
    needed = requests * (len(LEVELS) * rounds + 1)  # +1: the warm-up
    ids = iter(await pending_approvals(surface, needed))
    user = iter(range(10**9))
    try:
        warm = [submission(next(ids), next(user)) for _ in range(requests)]
        await load.measure(urls["ours"], warm, 8)
        await surface.tasks.drain(120)
        for _ in range(rounds):
            for level in LEVELS:
                batch = [submission(next(ids), next(user)) for _ in range(requests)]
                for name, url in urls.items():
                    # noop does not decide: the same batch is fresh for ours after it
                    measured = await load.measure(url, batch, level)
                    await surface.tasks.drain(120)
                    results[name][level].append(measured.latencies)
    finally:
        for runner, _ in servers:
            await runner.cleanup()
        await surface.aclose(drain_seconds=120)
        await store.close()
    return results


def report(results: Results) -> float:
    """The table; returns the slowest p99 of ours."""
    print(f"   c{'noop p50':>12}{'noop p99':>12}{'ours p50':>12}{'ours p99':>12}{'p99 ratio':>11}")
    slowest = 0.0
    for level in LEVELS:
        p50 = {name: _median_of(results[name][level], 0.5) for name in results}
        p99 = {name: _median_of(results[name][level], 0.99) for name in results}
        slowest = max(slowest, p99["ours"])
        cells = "".join(f"{p50[n] * 1e3:>10.2f}ms{p99[n] * 1e3:>10.2f}ms" for n in results)
        print(f"{level:>4}{cells}{p99['ours'] / p99['noop']:>10.2f}x")
    return slowest


def _median_of(rounds: list[list[float]], fraction: float) -> float:
    return statistics.median(percentile(latencies, fraction) for latencies in rounds)


async def main(requests: int, rounds: int) -> int:
    pin_to_server_cpu()
    load = LoadGenerator(workers=5)
    try:
        async with SlackProcess() as slack:
            with tempfile.TemporaryDirectory() as tmp:
                results = await submission_levels(slack, load, Path(tmp), requests, rounds)
    finally:
        load.close()
    print(
        f"Ack time of signed decision submissions: {rounds} rounds of {requests} per level "
        "and app (median over rounds)"
    )
    slowest = report(results)
    print(f"\nslowest p99 of ours: {slowest * 1e3:.1f} ms (Slack waits 3000 ms)")
    return 0 if slowest < 3.0 else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="submissions per level")
    parser.add_argument("--rounds", type=int, default=3, help="median over this many rounds")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.requests, args.rounds)))
