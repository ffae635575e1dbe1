"""`approvals-bot dev` as a real child process, and the page's own JSON API to drive it
the way the page does (the token read from the page, a same-origin Origin)."""

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
from typing import Any

import aiohttp

START_SECONDS = 30.0
URL_LINE = re.compile(r"approvals-bot dev: open (http://\S+) ; (.*)")
TOKEN = re.compile(r'<meta name="console-token" content="([^"]+)">')


def dev_env(workdir: Path, **extra: str) -> dict[str, str]:
    """The environment of a dev bot in `workdir` (its effects file there), with
    everything a developer's shell might hold for a real deployment set to values `dev`
    must ignore."""
    env = {
        **os.environ,
        "APPROVALS_DEMO_EFFECTS": str(workdir / "effects.jsonl"),
        "APPROVALS_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/not-this-one",
        "SLACK_BOT_TOKEN": "xoxb-a-real-workspace",
        "SLACK_API_URL": "https://slack.invalid/api/",
        "HOST": "0.0.0.0",
        **extra,
    }
    for name in ("APPROVALS_KEYS", "APPROVALS_POLICY", "APPROVALS_AGENTS"):
        if name not in extra:
            env.pop(name, None)
    return env


@dataclass(kw_only=True)
class Dev:
    process: asyncio.subprocess.Process
    url: str
    tour: str
    log: list[str] = field(default_factory=list)
    _reader: asyncio.Task[None] | None = None

    async def stop(self) -> int:
        """SIGTERM; the exit code (0 for a clean stop)."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(START_SECONDS):
            code = await self.process.wait()
            if self._reader is not None:
                await self._reader
        return code


async def start_dev(
    workdir: Path, env: Mapping[str, str], *args: str, python: str = sys.executable
) -> Dev:
    """Start `approvals-bot dev --port 0 --db workdir/dev.db` (with `python`); return
    once it printed its URL."""
    process = await asyncio.create_subprocess_exec(
        python, "-m", "bot", "dev", "--port", "0", "--db", str(workdir / "dev.db"),
        *args, env=dict(env), cwd=workdir, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    log: list[str] = []
    match = None
    async with asyncio.timeout(START_SECONDS):
        while match is None:
            line = (await process.stderr.readline()).decode()
            assert line, "dev exited before it printed its URL:\n" + "".join(log)
            log.append(line.rstrip("\n"))
            match = URL_LINE.search(line)
    dev = Dev(process=process, url=match.group(1), tour=match.group(2), log=log)
    dev._reader = asyncio.get_running_loop().create_task(_collect(process, log))
    return dev


async def _collect(process: asyncio.subprocess.Process, log: list[str]) -> None:
    assert process.stderr is not None
    while line := await process.stderr.readline():
        log.append(line.decode().rstrip("\n"))


async def failed_dev(
    workdir: Path, env: Mapping[str, str], *args: str
) -> tuple[int | None, list[str]]:
    """Run `approvals-bot dev` that is expected to stop by itself: (exit code, stderr lines)."""
    await asyncio.to_thread(workdir.mkdir)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "dev", "--db", str(workdir / "dev.db"), *args,
        env=dict(env), cwd=workdir, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(START_SECONDS):
        _, err = await process.communicate()
    return process.returncode, err.decode().splitlines()


@contextlib.asynccontextmanager
async def running_dev(workdir: Path, env: Mapping[str, str]) -> AsyncIterator[Dev]:
    dev = await start_dev(workdir, env)
    try:
        yield dev
    finally:
        code = await dev.stop()
        assert code == 0, "\n".join(dev.log)


class PageClient:
    """The page's calls: `seen(person)` is what the page shows them, `act(...)` what
    they do."""

    def __init__(self, session: aiohttp.ClientSession, url: str, token: str) -> None:
        self._session = session
        self.url = url
        self._headers = {"X-Console-Token": token, "Origin": url}

    @classmethod
    async def open(cls, session: aiohttp.ClientSession, url: str) -> PageClient:
        async with session.get(url + "/") as response:
            match = TOKEN.search(await response.text())
        assert match is not None, "the page carries no console token"
        return cls(session, url, match.group(1))

    async def seen(self, person: str) -> dict[str, Any]:
        async with self._session.get(
            f"{self.url}/console/state", params={"as": person}, headers=self._headers
        ) as response:
            assert response.status == 200, await response.text()
            seen: dict[str, Any] = await response.json()
            return seen

    async def act(self, person: str, **action: Any) -> dict[str, Any]:
        async with self._session.post(
            f"{self.url}/console/act", json={"as": person, **action}, headers=self._headers
        ) as response:
            answer: dict[str, Any] = await response.json()
            return answer
