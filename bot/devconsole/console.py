"""The stand-in Slack as one piece: its Web API (for the bot) and its page (for people)
on one port of 127.0.0.1, sharing one state; `connect` tells it where the bot listens.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from bot.devconsole.delivery import Delivery
from bot.devconsole.page import Page, host_guard
from bot.devconsole.state import SlackState
from bot.devconsole.webapi import API_PATH, HOOKS_PATH, WebApi
from bot.devconsole.workspace import Workspace
from bot.errors import ConfigError

HOST = "127.0.0.1"  # never another interface: the page decides approvals


@dataclass(frozen=True, kw_only=True)
class Secrets:
    """What the bot and the console share, made fresh for each run: the bot token the
    Web API accepts and the secret Slack signs requests with."""

    bot_token: str
    signing_secret: str

    @classmethod
    def generate(cls) -> Secrets:
        return cls(
            bot_token=f"xoxb-dev-{secrets.token_hex(16)}", signing_secret=secrets.token_hex(32)
        )


class DevConsole:
    def __init__(self, *, workspace: Workspace, shared: Secrets, port: int) -> None:
        self.workspace = workspace
        self.state = SlackState()
        self._shared = shared
        self._port = port
        self._hosts: tuple[str, ...] = ()
        self.url = ""
        self.delivery: Delivery | None = None

    @property
    def api_url(self) -> str:
        """The Web API's base URL (SLACK_API_URL for the bot)."""
        return self.url + API_PATH

    def connect(self, events_url: str) -> None:
        """The bot listens at `events_url`: deliver what people do there."""
        assert self.delivery is not None, "connect a running console"
        self.delivery.events_url = events_url

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[DevConsole]:
        """Serve on 127.0.0.1 for the block; a port in use is a ConfigError."""
        async with aiohttp.ClientSession() as session:
            app = web.Application(middlewares=[host_guard(lambda: self._hosts)])
            api = WebApi(state=self.state, workspace=self.workspace, token=self._shared.bot_token)
            delivery = Delivery(
                state=self.state,
                workspace=self.workspace,
                signing_secret=self._shared.signing_secret,
                session=session,
                hooks_url="",
            )
            page = Page(
                state=self.state,
                workspace=self.workspace,
                delivery=delivery,
                token=secrets.token_urlsafe(24),
            )
            app.add_routes([*api.routes(), *page.routes()])
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
            await runner.setup()
            try:
                port = await _listen(runner, self._port)
                self._hosts = (f"{HOST}:{port}", f"localhost:{port}")
                page.origins = tuple(f"http://{host}" for host in self._hosts)
                self.url = f"http://{HOST}:{port}"
                delivery.hooks_url = self.url + HOOKS_PATH
                self.delivery = delivery
                yield self
            finally:
                self.state.close()
                await runner.cleanup()


async def _listen(runner: web.AppRunner, port: int) -> int:
    try:
        await web.TCPSite(runner, HOST, port).start()
    except OSError as error:
        why = os.strerror(error.errno) if error.errno else str(error)
        raise ConfigError(f"cannot listen on {HOST}:{port} (--port): {why}") from None
    bound: int = runner.addresses[0][1]
    return bound
