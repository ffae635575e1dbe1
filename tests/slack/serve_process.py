"""`approvals-bot serve` as a real child process, for tests that need the whole server:
start it against the fake Slack, drive it with signed requests, stop it with SIGTERM or
kill it with SIGKILL, and start it again on the same database."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_driver import SlackDriver

SERVE_SECRET = "serve-process-signing-secret"
START_SECONDS = 30.0


SERVE_CHANNEL = "C0OPS"
SERVE_CHANNEL_MEMBERS = ["U0REQ", "U0APP", "U0OUT"]


def serve_env(fake: FakeSlack, workdir: Path, **extra: str) -> dict[str, str]:
    """The environment of a served bot on `workdir`'s database, with the demo ops agent
    (offline model) and its effects file in `workdir`; in the fake Slack, SERVE_CHANNEL
    has the SERVE_CHANNEL_MEMBERS (who may see and decide its calls)."""
    fake.channel_members.setdefault(SERVE_CHANNEL, list(SERVE_CHANNEL_MEMBERS))
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": "xoxb-serve",
        "SLACK_SIGNING_SECRET": SERVE_SECRET,
        "SLACK_API_URL": fake.api_url,
        "HOST": "127.0.0.1",
        "PORT": "0",
        "APPROVALS_DATABASE_URL": str(workdir / "approvals.db"),
        "APPROVALS_DEMO_EFFECTS": str(workdir / "effects.jsonl"),
        "APPROVALS_MODEL": "offline",
        **extra,
    }
    env.pop("APPROVALS_KEYS", None)
    return env


@dataclass(kw_only=True)
class Served:
    process: asyncio.subprocess.Process
    url: str
    log: list[str] = field(default_factory=list)
    _reader: asyncio.Task[None] | None = None

    def driver(self, session: aiohttp.ClientSession, fake: FakeSlack) -> SlackDriver:
        return SlackDriver(
            session=session,
            url=self.url,
            signing_secret=SERVE_SECRET,
            response_url=fake.response_url,
        )

    async def kill(self) -> None:
        """SIGKILL: the process dies where it stands."""
        self.process.send_signal(signal.SIGKILL)
        assert await self._ended() == -signal.SIGKILL

    async def stop(self) -> None:
        """SIGTERM: a clean stop (it must exit 0)."""
        self.process.send_signal(signal.SIGTERM)
        code = await self._ended()
        assert code == 0, "\n".join(self.log)

    async def _ended(self) -> int:
        async with asyncio.timeout(START_SECONDS):
            code = await self.process.wait()
            if self._reader is not None:
                await self._reader
        return code


async def start_serve(env: Mapping[str, str]) -> Served:
    """Start `approvals-bot serve`; return once it listens (its stderr is collected)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env=dict(env), stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    log: list[str] = []
    url = None
    async with asyncio.timeout(START_SECONDS):
        while url is None:
            line = (await process.stderr.readline()).decode()
            assert line, "serve exited before it listened:\n" + "".join(log)
            log.append(line.rstrip("\n"))
            if match := re.search(r"serving Slack at (http://\S+)", line):
                url = match.group(1)
    served = Served(process=process, url=url, log=log)
    served._reader = asyncio.get_running_loop().create_task(_collect(process, log))
    return served


async def _collect(process: asyncio.subprocess.Process, log: list[str]) -> None:
    """Keep reading stderr, so a chatty server never blocks on a full pipe."""
    assert process.stderr is not None
    while line := await process.stderr.readline():
        log.append(line.decode().rstrip("\n"))


@contextlib.asynccontextmanager
async def serving(env: Mapping[str, str]) -> AsyncIterator[Served]:
    """A served bot for the block, stopped cleanly after it (unless the block killed it)."""
    served = await start_serve(env)
    try:
        yield served
    finally:
        if served.process.returncode is None:
            await served.stop()
