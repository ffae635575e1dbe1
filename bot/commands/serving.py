"""The serving process's edges: HOST:PORT bound before Slack is reached (the probes answer
from then on), and SIGINT/SIGTERM, which cancel a start-up in progress or end serving.

aiohttp is imported inside the functions that listen (bot.commands.serve).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from bot.errors import ConfigError
from bot.logs import announce
from bot.slack.config import SlackSettings

if TYPE_CHECKING:
    from aiohttp import web


@contextlib.asynccontextmanager
async def listening_on(
    app: web.Application, settings: SlackSettings
) -> AsyncIterator[tuple[str, int]]:
    """Serve `app` on HOST:PORT for the block; (host, port) as bound. A port in use or
    a HOST that does not resolve is a ConfigError in one line."""
    from aiohttp import web

    from bot.slack.probes import AccessLog

    runner = web.AppRunner(app, access_log_class=AccessLog)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, settings.host, settings.port).start()
        except OSError as error:
            raise ConfigError(
                f"cannot listen on {settings.host}:{settings.port} (HOST, PORT): "
                f"{error.strerror or error}"
            ) from None
        host, port = runner.addresses[0][:2]
        yield host, port
    finally:
        await runner.cleanup()


class Port:
    """HOST:PORT serving `app`: from `listening()` (entered before Slack is reached)
    until `close()` or the end of that block."""

    def __init__(self, app: web.Application, settings: SlackSettings) -> None:
        self._app = app
        self._settings = settings
        self._stack = contextlib.AsyncExitStack()
        self.url = ""

    @contextlib.asynccontextmanager
    async def listening(self) -> AsyncIterator[None]:
        async with self._stack:
            host, port = await self._stack.enter_async_context(
                listening_on(self._app, self._settings)
            )
            self.url = f"http://{host}:{port}"
            announce(f"listening at {self.url} (/healthz, /readyz, /metrics); reaching Slack")
            yield

    async def close(self) -> None:
        await self._stack.aclose()


class Signals:
    """SIGINT and SIGTERM for the whole command: while starting, a signal cancels the
    start-up (its `async with` blocks close what they opened); once serving, it ends
    `serving()`, and the bot drains and closes as usual."""

    def __init__(self) -> None:
        self._stopped = asyncio.Event()
        self._task = asyncio.current_task()
        self._serving = False
        self.cancelled_start = False

    def __enter__(self) -> Signals:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._on_signal)
        return self

    def __exit__(self, *exc_info: object) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)

    def _on_signal(self) -> None:
        if self._serving:
            self._stopped.set()
        elif self._task is not None and not self.cancelled_start:
            self.cancelled_start = True
            self._task.cancel()

    async def serving(self) -> None:
        """Serve until a signal comes."""
        self._serving = True
        await self._stopped.wait()
