"""Replicas on one Postgres database: how soon a dead replica's run is taken over, and
what a second replica does to the acknowledgement time.

    python bench/replicas.py [--quick] [--takeovers 10] [--requests 600]
                             [--lease-seconds 15] [--sweep-seconds 10]

Real `approvals-bot serve` processes (the demo ops agent, offline model) on a fresh
Postgres database (APPROVALS_TEST_PG_URL names a database on the server to create it
from; default the local server's `postgres`, user postgres), talking to a fake Slack
Web API served by this process; the database is dropped at the end.

1. Takeover. Replica B serves throughout; replica A takes each decision (the Approve
   click and the modal go to it) and is SIGKILLed while the approved deploy runs (its
   effect applied, its result not recorded). Measured: seconds from the SIGKILL to B
   logging that it took the run over, `--takeovers` times (A restarted in between),
   median and max. The floor is the lease itself: a lease renewed a third of a lease
   before the kill runs out 2/3 of a lease after it, and B looks every sweep interval,
   so a takeover lands between 2/3 lease and lease + sweep.
2. Acks. N signed Approve clicks on one pending approval, 64 in flight, sent by other
   processes: first all to replica A alone, then half to A and half to B (32 each);
   p50 and p99 of the time to the HTTP answer, and two/one. The floor is the same run's
   single replica. Every request checks and records its signature in the database
   first (replay memory), so the replicas share a writer there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from slack_load import LoadGenerator, Measured, Signed, click, percentile

from store.keys import format_key, generate_key
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_driver import SlackDriver

SECRET = "bench-signing-secret"
CHANNEL = "CBENCH"
REQUESTER, APPROVER = "UREQ0", "UAPPROVER0"
START_SECONDS = 60.0
ADMIN_URL = os.environ.get("APPROVALS_TEST_PG_URL", "").strip() or (
    "postgresql://postgres@127.0.0.1:5432/postgres"
)


class Replica:
    """One `approvals-bot serve` process, its stderr kept line by line."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.name = name
        self.env = env
        self.lines: list[tuple[float, str]] = []  # (monotonic time read, line)
        self.url = ""
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.lines.clear()
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=self.env, stderr=asyncio.subprocess.PIPE
        )
        self._reader = asyncio.get_running_loop().create_task(self._read())
        found = await self.wait_for(r"serving Slack at (http://\S+)", START_SECONDS)
        self.url = found.group(1).removesuffix(",")

    async def _read(self) -> None:
        assert self._process is not None
        assert self._process.stderr is not None
        while line := await self._process.stderr.readline():
            self.lines.append((time.monotonic(), line.decode().rstrip("\n")))

    async def wait_for(self, pattern: str, within: float) -> re.Match[str]:
        """The first line matching `pattern` (waiting up to `within` seconds)."""
        compiled = re.compile(pattern)
        async with asyncio.timeout(within):
            while True:
                for _, line in self.lines:
                    if match := compiled.search(line):
                        return match
                if self._process is not None and self._process.returncode is not None:
                    raise RuntimeError(f"replica {self.name} exited:\n" + self.log())
                await asyncio.sleep(0.005)

    def seen_at(self, pattern: str) -> float | None:
        compiled = re.compile(pattern)
        return next((at for at, line in self.lines if compiled.search(line)), None)

    def log(self) -> str:
        return "\n".join(line for _, line in self.lines[-40:])

    async def kill(self) -> float:
        """SIGKILL; the monotonic time it was sent."""
        assert self._process is not None
        killed_at = time.monotonic()
        self._process.send_signal(signal.SIGKILL)
        await self._ended()
        return killed_at

    async def stop(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.send_signal(signal.SIGTERM)
            await self._ended()

    async def _ended(self) -> None:
        assert self._process is not None
        async with asyncio.timeout(START_SECONDS):
            await self._process.wait()
            if self._reader is not None:
                await self._reader


async def admin(sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(ADMIN_URL, timeout=10)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


@asynccontextmanager
async def fresh_database() -> AsyncIterator[str]:
    name = f"ab_replicas_bench_{secrets.token_hex(4)}"
    await admin(f'CREATE DATABASE "{name}"')
    try:
        yield f"{ADMIN_URL.partition('?')[0].rpartition('/')[0]}/{name}"
    finally:
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def replica_env(
    fake: FakeSlack, workdir: Path, url: str, name: str, keys: str, args: argparse.Namespace
) -> dict[str, str]:
    return {
        **os.environ,
        "SLACK_BOT_TOKEN": "xoxb-bench",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": fake.api_url,
        "HOST": "127.0.0.1",
        "PORT": "0",
        "LOG_LEVEL": "INFO",
        "APPROVALS_DATABASE_URL": url,
        "APPROVALS_KEYS": keys,
        "APPROVALS_WORKER_ID": f"bench-{name}",
        "APPROVALS_LEASE_SECONDS": str(args.lease_seconds),
        "APPROVALS_SWEEP_SECONDS": str(args.sweep_seconds),
        "APPROVALS_DEMO_EFFECTS": str(workdir / "effects.jsonl"),
        "APPROVALS_MODEL": "offline",
        "OPS_DEMO_LATENCY": "1.0",  # the crash window: effect applied, result not recorded
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }


def cards(fake: FakeSlack) -> list[Any]:
    return [
        call
        for call in fake.calls_to("chat.postMessage")
        if any(block.get("type") == "actions" for block in call.args.get("blocks") or [])
    ]


async def ask_and_approve(
    fake: FakeSlack, ask: SlackDriver, decide: SlackDriver, number: int
) -> None:
    """/agent through `ask`; Approve and the modal through `decide`."""
    before_cards, before_modals = len(cards(fake)), len(fake.calls_to("views.open"))
    await ask.command("/agent", f"deploy payments 1.0.{number}", user=REQUESTER, channel=CHANNEL)
    card = (await fake.wait_for("chat.postMessage", lambda c: c in cards(fake),
                                count=before_cards + 1, within=START_SECONDS))[-1]  # fmt: skip
    await decide.click(card, "Approve", user=APPROVER, ts=card.answer["ts"])
    opened = (await fake.wait_for("views.open", count=before_modals + 1, within=30))[-1]
    reply = await decide.submit(opened.args["view"], user=APPROVER, reason="bench")
    assert reply.status == 200, reply


async def effect_applied(workdir: Path, number: int) -> None:
    path, version = workdir / "effects.jsonl", f'"1.0.{number}"'
    async with asyncio.timeout(START_SECONDS):
        while True:  # polled: the effect is written by another process
            if path.exists() and version in path.read_text():
                return
            await asyncio.sleep(0.005)


async def takeovers(
    fake: FakeSlack, workdir: Path, a: Replica, b: Replica, args: argparse.Namespace
) -> list[float]:
    seconds: list[float] = []
    async with aiohttp.ClientSession() as session:
        for number in range(1, args.takeovers + 1):
            driver_a = SlackDriver(session=session, url=a.url, signing_secret=SECRET,
                                   response_url=fake.response_url)  # fmt: skip
            driver_b = SlackDriver(session=session, url=b.url, signing_secret=SECRET,
                                   response_url=fake.response_url)  # fmt: skip
            await ask_and_approve(fake, driver_b, driver_a, number)
            await effect_applied(workdir, number)
            killed_at = await a.kill()
            taken = await b.wait_for(
                r"taking over run (\w+) left resuming", args.lease_seconds * 3 + 60
            )
            taken_at = b.seen_at(re.escape(taken.group(0)))
            assert taken_at is not None
            seconds.append(taken_at - killed_at)
            b.lines.clear()  # the next takeover's line is new
            print(f"  takeover {number}: {seconds[-1]:.2f} s", file=sys.stderr)
            await a.start()
    return seconds


def approve_clicks(approval_id: str, blocks: list[Any], count: int, offset: int) -> list[Signed]:
    return [click(approval_id, blocks, offset + index) for index in range(count)]


async def acks(
    fake: FakeSlack, a: Replica, b: Replica, args: argparse.Namespace
) -> dict[str, Measured]:
    async with aiohttp.ClientSession() as session:
        driver = SlackDriver(session=session, url=a.url, signing_secret=SECRET,
                             response_url=fake.response_url)  # fmt: skip
        before = len(cards(fake))
        await driver.command("/agent", "deploy payments 9.9.9", user=REQUESTER, channel=CHANNEL)
        card = (await fake.wait_for("chat.postMessage", lambda c: c in cards(fake),
                                    count=before + 1, within=START_SECONDS))[-1]  # fmt: skip
    approval_id = next(
        element["value"]
        for block in card.args["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    )
    generator = LoadGenerator(workers=2)
    try:
        warm = approve_clicks(approval_id, card.args["blocks"], 64, 0)
        await generator.measure(a.url, warm, 16)
        one = approve_clicks(approval_id, card.args["blocks"], args.requests, 1000)
        alone = await generator.measure(a.url, one, 64)
        two = approve_clicks(approval_id, card.args["blocks"], args.requests, 100_000)
        half = len(two) // 2
        to_a, to_b = await asyncio.gather(
            generator.measure(a.url, two[:half], 32), generator.measure(b.url, two[half:], 32)
        )
    finally:
        generator.close()
    both = Measured(latencies=to_a.latencies + to_b.latencies, sent_at={})
    return {"one replica": alone, "two replicas": both}


def report(
    seconds: Sequence[float], measured: dict[str, Measured], args: argparse.Namespace
) -> None:
    median = statistics.median(seconds)
    print(
        f"\nLease takeover (APPROVALS_LEASE_SECONDS={args.lease_seconds:g}, "
        f"APPROVALS_SWEEP_SECONDS={args.sweep_seconds:g}), SIGKILL -> the other replica "
        f"takes the run over, {len(seconds)} times:"
    )
    print(
        f"  median {median:.2f} s, min {min(seconds):.2f} s, max {max(seconds):.2f} s; "
        f"median/lease {median / args.lease_seconds:.2f}"
        f" (expected between 0.67 and {1 + args.sweep_seconds / args.lease_seconds:.2f})"
    )
    print(f"\nAck time of signed Approve clicks, {args.requests} at c=64 (p50, p99):")
    p99 = {}
    for name, result in measured.items():
        p50 = percentile(result.latencies, 0.50) * 1000
        p99[name] = percentile(result.latencies, 0.99) * 1000
        print(f"  {name:13} {p50:8.2f} ms {p99[name]:8.2f} ms")
    print(f"  two/one p99: {p99['two replicas'] / p99['one replica']:.2f}x")


async def main(args: argparse.Namespace) -> int:
    fake = FakeSlack()
    await fake.start()
    fake.channel_members[CHANNEL] = [REQUESTER, APPROVER, *(f"UAPPROVER{i}" for i in range(7))]
    keys = format_key(generate_key("k1"))
    try:
        with tempfile.TemporaryDirectory() as directory:
            workdir = Path(directory)
            async with fresh_database() as url:
                a = Replica("a", replica_env(fake, workdir, url, "a", keys, args))
                b = Replica("b", replica_env(fake, workdir, url, "b", keys, args))
                await a.start()
                await b.start()
                try:
                    seconds = await takeovers(fake, workdir, a, b, args)
                    measured = await acks(fake, a, b, args)
                finally:
                    await a.stop()
                    await b.stop()
    finally:
        await fake.close()
    report(seconds, measured, args)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 takeovers, 2 s lease, 0.5 s sweep, 200 requests")  # fmt: skip
    parser.add_argument("--takeovers", type=int, default=10)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--lease-seconds", type=float, default=15.0)
    parser.add_argument("--sweep-seconds", type=float, default=10.0)
    parsed = parser.parse_args()
    if parsed.quick:
        parsed.takeovers, parsed.lease_seconds = 3, 2.0
        parsed.sweep_seconds, parsed.requests = 0.5, 200
    sys.exit(asyncio.run(main(parsed)))
