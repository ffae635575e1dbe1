"""Load for the Slack benches: a fake Slack Web API in its own process, signed Slack
requests, and a load generator in other processes that measures time to the answer.

Run directly (`python bench/slack_load.py`) it serves the fake Slack Web API and prints
its base URL, until its stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
# The fake Slack Web API lives with the Slack tests (tests.slack.fake_slack).
sys.path.insert(0, str(ROOT))

from bot.slack.actions import APPROVE_ACTION_ID  # noqa: E402
from bot.slack.server import EVENTS_PATH  # noqa: E402
from bot.slack.signature import compute_signature  # noqa: E402
from tests.slack.fake_slack import TEAM_ID, FakeSlack  # noqa: E402

SECRET = "bench-signing-secret"
FORM = "application/x-www-form-urlencoded"


# -- CPUs -----------------------------------------------------------------------------


def pin_to_server_cpu() -> None:
    """The measured app gets CPU 0 to itself (when there are at least two), so the fake
    Slack and the load generator, which real Slack would not run on our machine, do not
    compete with it for a core."""
    if _cpus() >= 2:
        os.sched_setaffinity(0, {0})


def pin_to_helper_cpus() -> None:
    cpus = _cpus()
    if cpus >= 2:
        os.sched_setaffinity(0, set(range(1, cpus)))


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


# -- a fake Slack in its own process -----------------------------------------------


class SlackProcess:
    """FakeSlack served by a child process (this module run as a script), so that its
    work does not share our event loop or GIL: real Slack is another machine."""

    def __init__(self) -> None:
        self.api_url = ""
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> SlackProcess:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert self._process.stdout is not None
        self.api_url = (await self._process.stdout.readline()).decode().strip()
        if not self.api_url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"fake Slack did not start: {self.api_url!r}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            await self._process.wait()


async def serve_fake_slack() -> None:
    """Child process: serve FakeSlack until our stdin closes."""
    pin_to_helper_cpus()
    fake = FakeSlack()
    print(await fake.start(), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    await fake.close()


# -- signed requests ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Signed:
    body: bytes
    headers: dict[str, str]
    trigger_id: str | None = None  # a click's, to match its views.open


@dataclass(frozen=True, kw_only=True)
class Measured:
    """Seconds from sending each request to its answer, and the wall-clock time
    (time.time(), comparable across processes) at which each click was sent."""

    latencies: list[float]
    sent_at: dict[str, float]


def sign(body: str, content_type: str = FORM, *, trigger_id: str | None = None) -> Signed:
    timestamp = str(int(time.time()))
    raw = body.encode()
    signature = compute_signature(signing_secret=SECRET, timestamp=timestamp, body=raw)
    return Signed(
        trigger_id=trigger_id,
        body=raw,
        headers={
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature,
        },
    )


def click(approval_id: str, card_blocks: list[Any], index: int) -> Signed:
    trigger_id = f"trigger.{index}"
    payload = {
        "type": "block_actions",
        "team": {"id": TEAM_ID},
        "user": {"id": f"UAPPROVER{index % 7}"},
        "trigger_id": trigger_id,
        "channel": {"id": "CBENCH"},
        "container": {"type": "message", "message_ts": "1.0", "channel_id": "CBENCH"},
        "message": {"ts": "1.0", "blocks": card_blocks},
        "actions": [
            {
                "type": "button",
                "action_id": APPROVE_ACTION_ID,
                "block_id": "decision",
                "value": approval_id,
            }
        ],
    }
    return sign(urlencode({"payload": json.dumps(payload)}), trigger_id=trigger_id)


def command(command_name: str, text: str, index: int) -> Signed:
    return sign(
        urlencode(
            {
                "command": command_name,
                "text": text,
                "user_id": f"UREQ{index}",
                "channel_id": "CBENCH",
                "team_id": TEAM_ID,
                "trigger_id": f"t{index}",
            }
        )
    )


def submission(approval_id: str, index: int) -> Signed:
    payload = {
        "type": "view_submission",
        "user": {"id": f"UAPPROVER{index}"},
        "team": {"id": TEAM_ID},
        "trigger_id": f"trigger.{index}",
        "view": {
            "id": f"V{index}",
            "type": "modal",
            "callback_id": "approval_decision",
            "private_metadata": f"approve|{approval_id}|CBENCH",
            "state": {"values": {"reason": {"reason_input": {"value": "bench"}}}},
        },
    }
    return sign(urlencode({"payload": json.dumps(payload)}))


def thread_reply(thread_ts: str, index: int) -> Signed:
    body = {
        "type": "event_callback",
        "event_id": f"EvBENCH{index}",
        "team_id": TEAM_ID,
        "event": {
            "type": "message",
            "channel": "CBENCH",
            "user": f"U{index}",
            "text": "more",
            "ts": f"2.{index}",
            "thread_ts": thread_ts,
        },
    }
    return sign(json.dumps(body), "application/json")


async def measure(url: str, requests: Sequence[Signed], concurrency: int) -> Measured:
    """Send `requests` with `concurrency` in flight; each one's seconds to its answer."""
    queue = list(reversed(requests))
    latencies: list[float] = []
    sent_at: dict[str, float] = {}
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            while queue:
                request = queue.pop()
                if request.trigger_id is not None:
                    sent_at[request.trigger_id] = time.time()
                started = time.perf_counter()
                async with session.post(url, data=request.body, headers=request.headers) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"HTTP {resp.status}: {await resp.text()}")
                latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Measured(latencies=latencies, sent_at=sent_at)


def measure_in_child(url: str, requests: Sequence[Signed], concurrency: int) -> Measured:
    return asyncio.run(measure(url, requests, concurrency))


class LoadGenerator:
    """Sends the requests from other processes, so the client's own work does not share
    the served app's event loop (or its GIL)."""

    def __init__(self, workers: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=pin_to_helper_cpus
        )

    async def measure(self, url: str, requests: Sequence[Signed], concurrency: int) -> Measured:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, measure_in_child, url, list(requests), concurrency
        )

    def close(self) -> None:
        self._pool.shutdown()


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}{EVENTS_PATH}"


if __name__ == "__main__":
    asyncio.run(serve_fake_slack())
