"""Two real `approvals-bot serve` processes on one fresh Postgres database, talking to
one fake Slack Web API and one demo downstream (the effects file), with short leases so
that a takeover happens within seconds; and what the tests read back: the database
(through a store of their own) and the effects file."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from store import open_store
from store.api import Store
from store.crypto import KeyRing
from store.keys import format_key, generate_key
from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import Served, serve_env, start_serve
from tests.slack.slack_driver import SlackDriver

LEASE_SECONDS = 2.0
SWEEP_SECONDS = 0.2
TOOL_SECONDS = 1.5  # each demo tool waits this long after its effect: the crash window


@dataclass(kw_only=True)
class Pair:
    a: Served
    b: Served
    envs: dict[str, dict[str, str]]
    session: aiohttp.ClientSession
    fake: FakeSlack
    drivers: dict[str, SlackDriver]
    store: Store  # the test's own view of the database
    effects: Path

    async def restart_a(self) -> None:
        """A new process for replica a (after it was killed)."""
        assert self.a.process.returncode is not None
        self.a = await start_serve(self.envs["a"])
        self.drivers["a"] = self.a.driver(self.session, self.fake)

    def effect_lines(self) -> list[dict[str, Any]]:
        if not self.effects.exists():
            return []
        return [json.loads(line) for line in self.effects.read_text().splitlines() if line]


@contextlib.asynccontextmanager
async def replica_pair(fake: FakeSlack, workdir: Path, url: str) -> AsyncIterator[Pair]:
    """Replicas a and b on the Postgres database at `url`."""
    key = generate_key("k1")
    envs = {}
    for name in ("a", "b"):
        env = serve_env(
            fake,
            workdir,
            APPROVALS_DATABASE_URL=url,
            APPROVALS_WORKER_ID=f"replica-{name}",
            APPROVALS_LEASE_SECONDS=str(LEASE_SECONDS),
            APPROVALS_SWEEP_SECONDS=str(SWEEP_SECONDS),
            OPS_DEMO_LATENCY=str(TOOL_SECONDS),
        )
        env["APPROVALS_KEYS"] = format_key(key)
        envs[name] = env
    pair: Pair | None = None
    store = await open_store(url, keyring=KeyRing([key]), environ={})
    try:
        async with aiohttp.ClientSession() as session:
            a = await start_serve(envs["a"])
            pair = Pair(
                a=a, b=a, envs=envs, session=session, fake=fake, drivers={},
                store=store, effects=workdir / "effects.jsonl",
            )  # fmt: skip
            pair.drivers["a"] = a.driver(session, fake)
            pair.b = await start_serve(envs["b"])
            pair.drivers["b"] = pair.b.driver(session, fake)
            yield pair
    finally:
        if pair is not None:
            for served in (pair.b, pair.a):
                if served.process.returncode is None:
                    await served.stop()
        await store.close()
