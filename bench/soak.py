"""A soak on Postgres: a steady stream of runs, each decided from its card, for minutes.

    nice -n 19 python bench/soak.py [--minutes 30] [--rate 20] [--warmup-seconds 240]
                                    [--trace-memory DIR] [--malloc-stats DIR]

One real `approvals-bot serve` process (the demo ops agent, offline model, `deploy`, an
idempotent tool with no latency) on a fresh Postgres database (APPROVALS_TEST_PG_URL
names a database on the server to create it from; default the local server's
`postgres`), talking to the fake Slack Web API of the tests, served by this process.
Every 1/`--rate` seconds a signed `/agent deploy ...` is sent; each card that appears is
approved as a person does it: the Approve click, then the modal's submission.

Measured: the acknowledgement time of every request (HTTP answer, by minute and by
kind: `/agent`, the click, the decision's submission; p50, p99), the `/agent` requests
the bot refused as busy (bot.slack.admission: nothing is started for them), the server's
resident memory (VmRSS, every 5 s), the runs started and completed, and the CPU time of
the server, of this process (the client and the fake Slack Web API) and of the
Postgres backends serving the database, per completed run. After the load stops, the
script waits for every run to finish and checks that nothing is left queued: no pending
approval, no run still working, the audit chain verifying.

`--malloc-stats DIR`: the server writes its allocators' counters (RSS, glibc's heap in
use and free, pymalloc's arenas and blocks, tracked objects by type) every 30 s to
DIR/malloc-<pid>.jsonl (bench/tracing/malloc_stats.py): where a growing RSS grows. It
costs little (a pass over the tracked objects every 30 s).

`--trace-memory DIR`: the server runs with tracemalloc (bench/tracing/sitecustomize.py,
a snapshot a minute into DIR) and what grew from the first minute after the warm-up to
the end is printed (bench/memory_growth.py). Tracing slows the server: use a low rate.

Pass marks: RSS growth under 10% (the mean of the last minute against the mean of the
first minute after `--warmup-seconds`, when caches and pools are full: the largest
cache, 4,096 snapshot checks filled at one a run, is full after about 205 s at 20 runs/s,
hence the default 240 s; the growth since the first minute after 60 s is printed too,
caches filling included); ack p99 of the
last full minute of load within 2x the first full minute's after the warm-up (steady);
every run that was not refused as busy completed. Exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.memory_growth import report as memory_report  # noqa: E402
from bot.slack.messages.replies import START_BUSY_TEXT  # noqa: E402
from store import open_store  # noqa: E402
from store.crypto import KeyRing  # noqa: E402
from store.keys import format_key, generate_key  # noqa: E402
from tests.slack.fake_slack import Call, FakeSlack  # noqa: E402
from tests.slack.serve_process import SERVE_CHANNEL, Served, serve_env, start_serve  # noqa: E402
from tests.slack.slack_driver import Reply  # noqa: E402
from tests.store.postgres_db import fresh_postgres_database  # noqa: E402

REQUESTER, APPROVER = "U0REQ", "U0APP"
RSS_EVERY_SECONDS = 5.0
DRAIN_SECONDS = 300.0
RSS_GROWTH_LIMIT = 0.10
P99_STEADY_LIMIT = 2.0
KINDS = ("/agent", "click", "submit")
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(kw_only=True)
class Soak:
    fake: FakeSlack
    served: Served
    session: aiohttp.ClientSession
    started: float = field(default_factory=time.monotonic)
    acks: dict[str, dict[int, list[float]]] = field(
        default_factory=lambda: {kind: defaultdict(list) for kind in KINDS}
    )
    rss: list[tuple[float, int]] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # seconds, by process
    asked: int = 0
    busy: int = 0
    decided: int = 0
    failures: list[str] = field(default_factory=list)
    seen_calls: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def minute(self) -> int:
        return int((time.monotonic() - self.started) // 60)

    async def timed(self, request: Any, what: str) -> Reply | None:
        """Await one request to the bot; its acknowledgement time is kept by minute."""
        sent = time.monotonic()
        try:
            reply: Reply = await request
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            self.failures.append(f"{what}: {error!r}")
            return None
        self.acks[what][self.minute()].append(time.monotonic() - sent)
        if reply.status != 200:
            self.failures.append(f"{what}: HTTP {reply.status}")
        return reply

    async def start_one(self, command: Any) -> None:
        reply = await self.timed(command, "/agent")
        if reply is not None and reply.text == START_BUSY_TEXT:
            self.busy += 1  # refused at the door: nothing was started for it

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
        soak.spawn(soak.start_one(command))
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


async def sample(soak: Soak, url: str, stop: asyncio.Event) -> None:
    """Every RSS_EVERY_SECONDS: the server's VmRSS, and the CPU time so far of the server
    and of every Postgres backend serving the database (kept by pid: a backend's last
    figure stands once its connection closes)."""
    pid = soak.served.process.pid
    connection = await asyncpg.connect(url)
    backends: dict[int, float] = {}
    try:
        while not stop.is_set():
            status = await asyncio.to_thread(Path(f"/proc/{pid}/status").read_text)
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    soak.rss.append((time.monotonic() - soak.started, int(line.split()[1])))
            soak.cpu["server"] = cpu_seconds(pid) or soak.cpu.get("server", 0.0)
            rows = await connection.fetch(
                "SELECT pid FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            for row in rows:
                backends[row["pid"]] = cpu_seconds(row["pid"]) or backends.get(row["pid"], 0.0)
            soak.cpu["postgres"] = sum(backends.values())
            await asyncio.sleep(RSS_EVERY_SECONDS)
    finally:
        await connection.close()


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


async def settled(url: str, key: Any, expected: int) -> dict[str, Any]:
    """Wait for every run to finish; what is left in the database."""
    store = await open_store(url, keyring=KeyRing([key]), environ={})
    try:
        deadline = time.monotonic() + DRAIN_SECONDS
        while True:
            by_status = {
                status: len(await store.list_runs(status=status, limit=100_000))
                for status in ("running", "resuming", "paused", "completed")
            }
            working = by_status["running"] + by_status["resuming"] + by_status["paused"]
            completed = by_status["completed"]
            if (not working and completed >= expected) or time.monotonic() > deadline:
                break
            print(f"draining: {completed} of {expected} runs completed; {by_status}", flush=True)
            await asyncio.sleep(5.0)  # a poll step, under the deadline
        pending = await store.list_approvals(status="pending", limit=100_000)
        verification = await store.verify_audit()
        return {
            "runs completed": completed,
            "runs still working": working,
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
    probes = {
        "SOAK_TRACE_MEMORY_DIR": args.trace_memory,
        "SOAK_MALLOC_STATS_DIR": args.malloc_stats,
    }
    for variable, directory in probes.items():
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            env[variable] = str(directory)
    if any(probes.values()):
        tracing = str(ROOT / "bench" / "tracing")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tracing, env.get("PYTHONPATH")]))
    served = await start_serve(env)
    timeout = aiohttp.ClientTimeout(total=30)
    connector = aiohttp.TCPConnector(limit=256)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        soak = Soak(fake=fake, served=served, session=session)
        stop = asyncio.Event()
        deciding = asyncio.create_task(decide_cards(soak, stop))
        sampling = asyncio.create_task(sample(soak, url, stop))
        try:
            await ask(soak, args.rate, args.minutes * 60)
            loaded = time.monotonic() - soak.started
            await asyncio.gather(*soak.tasks, return_exceptions=True)  # every /agent answered
            left = await settled(url, key, soak.asked - soak.busy)
            stop.set()
            await asyncio.gather(deciding, sampling, return_exceptions=True)
            await asyncio.gather(*soak.tasks, return_exceptions=True)
            usage = resource.getrusage(resource.RUSAGE_SELF)
            soak.cpu["client"] = usage.ru_utime + usage.ru_stime
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


def percentiles(times: list[float]) -> tuple[float, float]:
    """p50 and p99 of `times`, in ms."""
    ordered = sorted(times)
    p99 = ordered[min(int(len(ordered) * 0.99), len(ordered) - 1)]
    return ordered[len(ordered) // 2] * 1000, p99 * 1000


def report(soak: Soak, args: argparse.Namespace, loaded: float, left: dict[str, Any]) -> int:
    print(f"soak: {args.minutes:g} min at {args.rate:g} runs/s; {soak.asked} runs asked "
          f"({soak.asked / loaded:.1f}/s achieved), {soak.busy} refused as busy, "
          f"{soak.decided} decided")  # fmt: skip
    print("minute  " + "".join(f"{kind:>8} acks  p50 ms  p99 ms" for kind in KINDS))
    minutes = sorted({minute for by_minute in soak.acks.values() for minute in by_minute})
    for minute in minutes:
        cells = []
        for kind in KINDS:
            times = soak.acks[kind].get(minute, [])
            p50, p99 = percentiles(times) if times else (0.0, 0.0)
            cells.append(f"{len(times):13d} {p50:7.1f} {p99:7.1f}")
        print(f"{minute:6d}  " + "".join(cells))
    steady = p99_steadiness(soak, args, loaded)
    print(f"ack p99 (all kinds), last full minute of load / first full minute after the "
          f"warm-up: {steady:.2f}x")  # fmt: skip
    growth, warm, last = rss_growth(soak, since_seconds=args.warmup_seconds)
    early, _, _ = rss_growth(soak, since_seconds=min(60.0, args.warmup_seconds))
    by_minute: dict[int, list[int]] = defaultdict(list)
    for at, kb in soak.rss:
        by_minute[int(at // 60)].append(kb)
    print("RSS by minute (MiB): " + " ".join(
        f"{statistics.mean(kbs) / 1024:.1f}" for _, kbs in sorted(by_minute.items())))  # fmt: skip
    print(f"RSS: first minute after warm-up {statistics.mean(warm) / 1024 if warm else 0:.1f} "
          f"MiB, last minute {statistics.mean(last) / 1024 if last else 0:.1f} MiB, "
          f"growth {growth * 100:+.1f}% (since the first minute after 60 s, caches "
          f"filling included: {early * 100:+.1f}%)")  # fmt: skip
    for name, value in left.items():
        print(f"{name}: {value}")
    done = max(left["runs completed"], 1)
    print("CPU per completed run: " + ", ".join(
        f"{name} {seconds * 1000 / done:.1f} ms ({seconds:.0f} s)"
        for name, seconds in soak.cpu.items()
    ) + f"; total {sum(soak.cpu.values()) * 1000 / done:.1f} ms")  # fmt: skip
    print(f"request failures: {len(soak.failures)} {soak.failures[:5]}")
    if args.trace_memory is not None:
        memory_report(args.trace_memory, since_seconds=args.warmup_seconds, top=15, series=True)
    passed = (
        growth < RSS_GROWTH_LIMIT
        and steady <= P99_STEADY_LIMIT
        and left["runs completed"] == soak.asked - soak.busy
        and left["runs still working"] == 0
        and left["approvals pending"] == 0
        and left["audit chain verifies"]
        and not soak.failures
    )
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


def rss_growth(soak: Soak, *, since_seconds: float) -> tuple[float, list[int], list[int]]:
    """The mean RSS of the last minute against the first minute from `since_seconds`,
    and the two minutes' samples (KiB)."""
    warm = [kb for at, kb in soak.rss if since_seconds <= at < since_seconds + 60]
    last = [kb for at, kb in soak.rss if at >= soak.rss[-1][0] - 60] if soak.rss else []
    growth = statistics.mean(last) / statistics.mean(warm) - 1 if warm and last else float("nan")
    return growth, warm, last


def p99_steadiness(soak: Soak, args: argparse.Namespace, loaded: float) -> float:
    """The ack p99 of the last full minute of load against the first full minute after
    the warm-up (1.0 when the load was too short to have two)."""
    first = int(-(-args.warmup_seconds // 60))
    last = int(loaded // 60) - 1
    if last <= first:
        return 1.0
    p99s = []
    for minute in (first, last):
        times = [t for kind in KINDS for t in soak.acks[kind].get(minute, [])]
        p99s.append(percentiles(times)[1] if times else 0.0)
    return p99s[1] / p99s[0] if p99s[0] else float("inf")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=20.0, help="runs started per second")
    parser.add_argument("--warmup-seconds", type=float, default=240.0)
    parser.add_argument("--trace-memory", type=Path, default=None, metavar="DIR",
                        help="tracemalloc snapshots of the server into DIR")  # fmt: skip
    parser.add_argument("--malloc-stats", type=Path, default=None, metavar="DIR",
                        help="the server's allocator counters every 30 s into DIR "
                        "(bench/tracing/malloc_stats.py)")  # fmt: skip
    args = parser.parse_args()
    with fresh_postgres_database() as url, tempfile.TemporaryDirectory() as workdir:
        return asyncio.run(soak_on(url, Path(workdir), args))


if __name__ == "__main__":
    sys.exit(main())
