"""The MCP gateway end to end: a real `approvals-bot serve` process with APPROVALS_MCP,
which starts the real stdio upstream of tests/mcp/upstream.py from its file; a real MCP
client session (the SDK's) over Streamable HTTP to its `/mcp`; the fake Slack Web API
for the cards, and signed Slack requests for the decisions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bot.mcp.tokens import new_token, token_digest
from tests.polling import until
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.serve_process import SERVE_CHANNEL, Served, serve_env, start_serve
from tests.slack.slack_driver import SlackDriver
from tests.slack.slack_harness import card_calls

ROOT = Path(__file__).resolve().parents[2]
CLIENT = "agent"
REQUESTER = "U0REQ"  # the Slack user the client acts for
APPROVER = "U0APP"
CHANNEL = SERVE_CHANNEL


@dataclass(kw_only=True)
class Setup:
    """One gateway's files in `workdir`: its file, the upstream's effects and knobs."""

    workdir: Path
    token: str = field(default_factory=new_token)

    @property
    def effects_file(self) -> Path:
        return self.workdir / "upstream-effects.jsonl"

    @property
    def descriptions_file(self) -> Path:
        return self.workdir / "descriptions.json"

    def effects(self) -> list[dict[str, Any]]:
        if not self.effects_file.exists():
            return []
        lines = self.effects_file.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]

    def describe(self, tool: str, description: str) -> None:
        """Change the upstream's description of `tool` (it reads it at every listing)."""
        self.descriptions_file.write_text(json.dumps({tool: description}), encoding="utf-8")

    def write(
        self,
        *,
        wait: str = "50s",
        needs_approval: str = '"unless_read_only"',
        name: str = "mcp.toml",
    ) -> Path:
        path = self.workdir / name
        path.write_text(
            f"""
[gateway]
wait = "{wait}"
progress_every = "1s"

[upstreams.ops]
command = "{sys.executable}"
args = ["-m", "tests.mcp.upstream"]
cwd = "{ROOT}"
env = ["UPSTREAM_EFFECTS", "UPSTREAM_DESCRIPTIONS", "PYTHONPATH"]
needs_approval = {needs_approval}
timeout = "30s"

[clients.{CLIENT}]
token_digest = "{token_digest(self.token)}"
channel = "{CHANNEL}"
user = "{REQUESTER}"
""",
            encoding="utf-8",
        )
        return path

    def env(self, fake: FakeSlack, **extra: str) -> dict[str, str]:
        return serve_env(
            fake,
            self.workdir,
            APPROVALS_MCP=str(self.workdir / "mcp.toml"),
            UPSTREAM_EFFECTS=str(self.effects_file),
            UPSTREAM_DESCRIPTIONS=str(self.descriptions_file),
            PYTHONPATH=str(ROOT),
            **extra,
        )


async def start_gateway(env: Mapping[str, str]) -> tuple[Served, str]:
    """`approvals-bot serve` with the gateway; (the process, its /mcp URL)."""
    served = await start_serve(env)

    async def mcp_url() -> str | None:
        for line in served.log:
            if match := re.search(r"MCP gateway at (http://\S+)", line):
                return match.group(1)
        return None

    return served, await until(mcp_url, "the gateway's start-up line:\n" + "\n".join(served.log))


@contextlib.asynccontextmanager
async def gateway(env: Mapping[str, str]) -> AsyncIterator[tuple[Served, str]]:
    served, url = await start_gateway(env)
    try:
        yield served, url
    finally:
        if served.process.returncode is None:
            await served.stop()


@contextlib.asynccontextmanager
async def mcp_session(
    url: str, token: str, *, mode: str = "auto", headers: Mapping[str, str] | None = None
) -> AsyncIterator[Client]:
    """A real MCP client session to the gateway with `token` ("auto": the 2026
    protocol; "legacy": the initialize handshake), sending `headers` too."""
    sent = {**(headers or {}), "Authorization": f"Bearer {token}"}
    http = create_mcp_http_client(headers=sent)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


class Progress:
    """A progress callback that keeps the messages it was given."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")


async def call_in_own_session(
    url: str,
    token: str,
    tool: str,
    arguments: Mapping[str, Any],
    *,
    mode: str = "auto",
    progress: Progress | None = None,
) -> Any:
    """One call in a session of its own (run it as a task: a test can give the call up,
    or kill the server under it, without the session's failure reaching the test)."""
    async with mcp_session(url, token, mode=mode) as client:
        return await client.call_tool(tool, dict(arguments), progress_callback=progress)


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def next_card(fake: FakeSlack, *, count: int = 1) -> Call:
    """The `count`th review card posted."""
    cards = await fake.wait_for(
        "chat.postMessage", lambda call: call in card_calls(fake), count=count, within=30
    )
    return cards[count - 1]


async def decide(
    fake: FakeSlack,
    driver: SlackDriver,
    card: Call,
    action: str,
    *,
    user: str = APPROVER,
    reason: str = "looks right",
    message: str | None = None,
) -> None:
    """Press Approve or Reject on `card` and submit the modal it opens."""
    opened = len(fake.calls_to("views.open"))
    await driver.click(card, action, user=user, ts=card.answer["ts"])
    views = await fake.wait_for("views.open", count=opened + 1)
    reply = await driver.submit(views[-1].args["view"], user=user, reason=reason, message=message)
    assert reply.status == 200, reply.text


@contextlib.asynccontextmanager
async def slack_driver(served: Served, fake: FakeSlack) -> AsyncIterator[SlackDriver]:
    async with aiohttp.ClientSession() as session:
        yield served.driver(session, fake)


@dataclass(kw_only=True)
class Running:
    """A gateway serving, what drives its Slack side, and a client session to it."""

    served: Served
    url: str
    driver: SlackDriver
    client: Client


@contextlib.asynccontextmanager
async def running(setup: Setup, fake: FakeSlack, **env: str) -> AsyncIterator[Running]:
    """`setup`'s gateway (its file written before), with `env` over its environment."""
    async with (
        gateway(setup.env(fake, **env)) as (served, url),
        slack_driver(served, fake) as driver,
        mcp_session(url, setup.token) as client,
    ):
        yield Running(served=served, url=url, driver=driver, client=client)


async def abandon(call: asyncio.Task[Any]) -> None:
    """A client gives up a call it made (its request is cancelled, or it failed)."""
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await call
