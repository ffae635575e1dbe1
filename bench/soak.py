"""A soak on Postgres: a steady stream of runs, each decided from its card, for minutes.

    nice -n 19 python bench/soak.py [--minutes 30] [--rate 20] [--warmup-seconds 60]

One real `approvals-bot serve` process (the demo ops agent, offline model, `deploy`, an
idempotent tool with no latency) on a fresh Postgres database (APPROVALS_TEST_PG_URL
names a database on the server to create it from; default the local server's
`postgres`), talking to the fake Slack Web API of the tests, served by this process.
Every 1/`--rate` seconds a signed `/agent deploy ...` is sent; each card that appears is
approved as a person does it: the Approve click, then the modal's submission.

Measured: the acknowledgement time of every request (HTTP answer, by minute: p50, p99),
the server's resident memory (VmRSS, every 5 s) and the runs started and completed.
After the load stops, the script waits for every run to finish and checks that nothing
is left queued: no pending approval, no run still working, the audit chain verifying.

Pass marks: RSS growth under 10% (the mean of the last minute against the mean of the
first minute after `--warmup-seconds`, when caches and pools are full); ack p99 of the
last minute within 2x the first minute's (steady); every run completed. Exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from store import open_store  # noqa: E402
from store.crypto import KeyRing  # noqa: E402
from store.keys import format_key, generate_key  # noqa: E402
from tests.slack.fake_slack import Call, FakeSlack  # noqa: E402
from tests.slack.serve_process import SERVE_CHANNEL, Served, serve_env, start_serve  # noqa: E402
from tests.store.postgres_db import fresh_postgres_database  # noqa: E402

REQUESTER, APPROVER = "U0REQ", "U0APP"
RSS_EVERY_SECONDS = 5.0
DRAIN_SECONDS = 300.0
RSS_GROWTH_LIMIT = 0.10
P99_STEADY_LIMIT = 2.0


@dataclass(kw_only=True)
class Soak:
    fake: FakeSlack
    served: Served
    session: aiohttp.ClientSession
    started: float = field(default_factory=time.monotonic)
    acks: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    rss: list[tuple[float, int]] = field(default_factory=list)
    asked: int = 0
    decided: int = 0
    failures: list[str] = field(default_factory=list)
    seen_calls: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def minute(self) -> int:
        return int((time.monotonic() - self.started) // 60)

    async def timed(self, request: Any, what: str) -> None:
        """Await one request to the bot; its acknowledgement time is kept by minute."""
        sent = time.monotonic()
        try:
            reply = await request
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            self.failures.append(f"{what}: {error!r}")
            return
        self.acks[self.minute()].append(time.monotonic() - sent)
        if reply.status != 200:
            self.failures.append(f"{what}: HTTP {reply.status}")

    def spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def ask(soak: Soak, rate: float, seconds: float) -> None:
    """`/agent deploy ...` at a steady `rate`, for `seconds` (no catching up in bursts)."""
    driver = soak.served.driver(soak.session, soak.fake)
    begins = time.monotonic()
    while (elapsed := time.monotonic() - begins) < seconds:
        soak.asked += 1
        task = f"deploy payments 1.{soak.asked // 1000}.{soak.asked % 1000}"
        command = driver.command("/agent", task, user=REQUESTER, channel=SERVE_CHANNEL)
        soak.spawn(soak.timed(command, "/agent"))
        await asyncio.sleep(max(soak.asked / rate - elapsed, 0))


async def decide_cards(soak: Soak, stop: asyncio.Event) -> None:
    """Approve every new card: the click, then (once its modal opens) the submission."""
    driver = soak.served.driver(soak.session, soak.fake)
    opened_for: dict[str, Call] = {}
    while not stop.is_set():
        calls = soak.fake.calls[soak.seen_calls :]
        soak.seen_calls += len(calls)
        for call in calls:
            if call.method == "chat.postMessage" and call.ok and _is_card(call):
                payload = driver.click_payload(call, "Approve", user=APPROVER,
                                               ts=call.answer["ts"])  # fmt: skip
                opened_for[payload["trigger_id"]] = call
                soak.spawn(soak.timed(driver.interactive(payload), "click"))
            elif (
                call.method == "views.open"
                and call.ok
                and opened_for.pop(str(call.args.get("trigger_id")), None) is not None
            ):
                submit = driver.submit(call.args["view"], user=APPROVER, reason="soak")
                soak.decided += 1
                soak.spawn(soak.timed(submit, "submit"))
        await asyncio.sleep(0.01)  # a poll step: the fake records calls as they come


def _is_card(call: Call) -> bool:
    return any(block.get("type") == "actions" for block in call.args.get("blocks") or [])


async def sample_rss(soak: Soak, stop: asyncio.Event) -> None:
    status = Path(f"/proc/{soak.served.process.pid}/status")
    while not stop.is_set():
        text = await asyncio.to_thread(status.read_text)
        for line in text.splitlines():
            if line.startswith("VmRSS:"):
                soak.rss.append((time.monotonic() - soak.started, int(line.split()[1])))
        await asyncio.sleep(RSS_EVERY_SECONDS)


async def settled(url: str, key: Any, expected: int) -> dict[str, Any]:
    """Wait for every run to finish; what is left in the database."""
    store = await open_store(url, keyring=KeyRing([key]), environ={})
    try:
        deadline = time.monotonic() + DRAIN_SECONDS
        while True:
            working = [
                run for status in ("running", "resuming", "paused")
                for run in await store.list_runs(status=status, limit=100_000)
            ]  # fmt: skip
            completed = await store.list_runs(status="completed", limit=100_000)
            if (not working and len(completed) >= expected) or time.monotonic() > deadline:
                break
            print(f"draining: {len(completed)} of {expected} runs completed", flush=True)
            await asyncio.sleep(5.0)  # a poll step, under the deadline
        pending = await store.list_approvals(status="pending", limit=100_000)
        verification = await store.verify_audit()
        return {
            "runs completed": len(completed),
            "runs still working": len(working),
            "approvals pending": len(pending),
            "audit chain verifies": verification.ok,
        }
    finally:
        await store.close()


async def soak_on(url: str, workdir: Path, args: argparse.Namespace) -> int:
    fake = FakeSlack()
    await fake.start()
    key = generate_key("k1")
    env = serve_env(fake, workdir, APPROVALS_DATABASE_URL=url, LOG_LEVEL="WARNING",
                    APPROVALS_SWEEP_SECONDS="10")  # fmt: skip
    env["APPROVALS_KEYS"] = format_key(key)
    served = await start_serve(env)
    timeout = aiohttp.ClientTimeout(total=30)
    connector = aiohttp.TCPConnector(limit=256)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        soak = Soak(fake=fake, served=served, session=session)
        stop = asyncio.Event()
        deciding = asyncio.create_task(decide_cards(soak, stop))
        sampling = asyncio.create_task(sample_rss(soak, stop))
        try:
            await ask(soak, args.rate, args.minutes * 60)
            loaded = time.monotonic() - soak.started
            left = await settled(url, key, soak.asked)
            stop.set()
            await asyncio.gather(deciding, sampling, return_exceptions=True)
            await asyncio.gather(*soak.tasks, return_exceptions=True)
            return report(soak, args, loaded, left)
        finally:
            stop.set()
            await stop_server(served)
            await fake.close()


async def stop_server(served: Served) -> None:
    """SIGTERM (it finishes what it acknowledged, up to 30 s); SIGKILL past that."""
    try:
        await served.stop()
    except (TimeoutError, AssertionError):
        served.process.kill()
        await served.process.wait()


def report(soak: Soak, args: argparse.Namespace, loaded: float, left: dict[str, Any]) -> int:
    print(f"soak: {args.minutes:g} min at {args.rate:g} runs/s; {soak.asked} runs asked "
          f"({soak.asked / loaded:.1f}/s achieved), {soak.decided} decided")  # fmt: skip
    print("minute  acks   p50 ms   p99 ms")
    p99s = []
    for minute in sorted(soak.acks):
        times = sorted(soak.acks[minute])
        p50, p99 = times[len(times) // 2], times[min(int(len(times) * 0.99), len(times) - 1)]
        p99s.append(p99)
        print(f"{minute:6d} {len(times):6d} {p50 * 1000:8.1f} {p99 * 1000:8.1f}")
    warm = [kb for at, kb in soak.rss if args.warmup_seconds <= at < args.warmup_seconds + 60]
    last = [kb for at, kb in soak.rss if at >= soak.rss[-1][0] - 60] if soak.rss else []
    growth = statistics.mean(last) / statistics.mean(warm) - 1 if warm and last else float("nan")
    print(f"RSS: first minute after warm-up {statistics.mean(warm) / 1024 if warm else 0:.1f} "
          f"MiB, last minute {statistics.mean(last) / 1024 if last else 0:.1f} MiB, "
          f"growth {growth * 100:+.1f}%")  # fmt: skip
    steady = p99s[-1] / p99s[0] if len(p99s) > 1 else 1.0
    print(f"ack p99 last minute / first minute: {steady:.2f}x")
    for name, value in left.items():
        print(f"{name}: {value}")
    print(f"request failures: {len(soak.failures)} {soak.failures[:5]}")
    passed = (
        growth < RSS_GROWTH_LIMIT
        and steady <= P99_STEADY_LIMIT
        and left["runs completed"] == soak.asked
        and left["runs still working"] == 0
        and left["approvals pending"] == 0
        and left["audit chain verifies"]
        and not soak.failures
    )
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=20.0, help="runs started per second")
    parser.add_argument("--warmup-seconds", type=float, default=60.0)
    args = parser.parse_args()
    with fresh_postgres_database() as url, tempfile.TemporaryDirectory() as workdir:
        return asyncio.run(soak_on(url, Path(workdir), args))


if __name__ == "__main__":
    sys.exit(main())
