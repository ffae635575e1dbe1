"""`approvals-bot serve` (HTTP: Events API, interactivity, slash commands) and
`approvals-bot socket` (Socket Mode).

Both read their configuration from the environment (see bot.slack.config and the
README), open the model and the store, listen on HOST:PORT (the probes answer from then
on, saying what the bot waits for: bot.commands.serving), open the Slack surface
(`open_bot`, bot.commands.bot_opening: auth.test, tried again while Slack cannot be
reached), finish what a dead process left (`recover`), start
the expiry sweeper (and, on glibc, the return of freed heap pages once a minute:
bot.commands.freed_memory), take Slack's requests until SIGINT/SIGTERM, then stop listening,
drain the tasks they own and close everything, each part by whoever opened it. With
`APPROVALS_MCP` set, the MCP gateway (bot.commands.mcp_gateway) answers `/mcp` on the
same port: 503 until its upstreams are connected, then the gateway itself.

The Slack side (aiohttp, Bolt, slack_sdk) is about half of the CLI's start-up, so it is
imported inside the functions that serve: `approvals-bot --help`, `demo` and the
operator commands do not pay for it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from bot.commands.bot_opening import open_bot
from bot.commands.freed_memory import returning_freed_memory
from bot.commands.mcp_gateway import GatewaySetup
from bot.commands.serving import Port, Signals
from bot.logs import announce, configure_logging, log_settings_from_env
from bot.metrics import Metrics
from bot.policy.loading import POLICY_ENV
from bot.service import ApprovalService, sweep_seconds_from_env
from bot.slack.config import Mode, SlackSettings, load_settings
from store.config import database_url_from_env

if TYPE_CHECKING:
    from bot.slack.probes import Probes, Readiness
    from bot.slack.server import StartingApp
    from bot.slack.surface import SlackSurface

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register `serve` and `socket`."""
    serve_http = subparsers.add_parser(
        "serve",
        help="serve Slack over HTTP at POST /slack/events (and /healthz, /readyz, /metrics)",
        description="Serve Slack over HTTP. Configuration comes from the environment: "
        "SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_API_URL, HOST, PORT, "
        "APPROVALS_DATABASE_URL, APPROVALS_KEYS, APPROVALS_AGENTS, APPROVALS_POLICY, "
        "APPROVALS_MODEL, LOG_LEVEL, LOG_FORMAT. GET /healthz, /readyz and /metrics are "
        "served beside the Slack path.",
    )
    serve_http.set_defaults(func=lambda args: run("http"))
    socket_mode = subparsers.add_parser(
        "socket",
        help="serve Slack over Socket Mode (needs SLACK_APP_TOKEN)",
        description="Serve Slack over Socket Mode: no public URL needed. Same environment "
        "as `serve`, plus SLACK_APP_TOKEN (xapp-...); HOST:PORT serves only /healthz, "
        "/readyz and /metrics.",
    )
    socket_mode.set_defaults(func=lambda args: run("socket"))


def run(mode: Mode) -> int:
    """Serve in `mode` until stopped (the body of `approvals-bot serve` / `socket`)."""
    configure_logging(log_settings_from_env(os.environ))  # first: every line as it says
    settings = load_settings(os.environ, mode=mode)
    asyncio.run(serve(settings, mode=mode, environ=os.environ))
    return 0


async def serve(
    settings: SlackSettings,
    *,
    mode: Mode,
    environ: Mapping[str, str],
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Open, recover, serve until SIGINT/SIGTERM, close. A signal while still starting
    (waiting for an unreachable Slack, say) stops at once, closing what was opened.
    `on_listening` (HTTP mode) is told the events URL once the bot takes Slack's requests
    there (`dev` uses it)."""
    with Signals() as stop:
        try:
            await _open_and_serve(
                settings, mode=mode, environ=environ, stop=stop, on_listening=on_listening
            )
        except asyncio.CancelledError:
            if not stop.cancelled_start:
                raise
            log.info("stopped while starting")


async def _open_and_serve(
    settings: SlackSettings,
    *,
    mode: Mode,
    environ: Mapping[str, str],
    stop: Signals,
    on_listening: Callable[[str], None] | None,
) -> None:
    """Listen on HOST:PORT before Slack is reached (the probes say what the bot waits
    for), open the bot, recover, then take Slack's requests until a signal comes."""
    from bot.slack.probes import Probes, Readiness, build_probe_app
    from bot.slack.server import StartingApp

    metrics = Metrics()
    gateway = GatewaySetup.from_env(environ, metrics=metrics)  # APPROVALS_MCP, if set
    readiness = Readiness(metrics, reason="waiting for Slack: asking auth.test who the bot is")
    endpoint = StartingApp(readiness) if mode == "http" else None
    app = endpoint.app if endpoint else build_probe_app(readiness)
    if gateway is not None:
        gateway.mount(app)  # /mcp answers 503 until the gateway runs
    front = _Front(
        settings=settings, readiness=readiness, port=Port(app, settings), gateway=gateway, stop=stop
    )
    async with (
        open_bot(
            settings,
            environ=environ,
            metrics=metrics,
            gateway=gateway,
            before_slack=front.port.listening,
            waiting=readiness.waiting,
        ) as surface,
        _gateway_running(gateway, surface.service),
        returning_freed_memory(),
    ):
        await _start_work(surface.service, readiness, environ)
        probes = Probes(
            service=surface.service,
            health=surface.health,
            metrics=metrics,
            detail=gateway.readiness if gateway is not None else None,
        )
        about = started_line(settings, environ=environ, surface=surface)
        if endpoint is not None:
            await _serve_http(front, endpoint, surface, probes, about, on_listening)
        else:
            await _serve_socket(front, surface, probes, about)
        if gateway is not None:
            gateway.stop_waiting()  # waiting MCP calls answer "still pending" now
        await front.port.close()  # no new request while the bot drains


@dataclass(frozen=True, kw_only=True)
class _Front:
    """What answers at HOST:PORT while the bot starts and serves: the probes' readiness,
    the port, the MCP gateway (if set), and the signals that end serving."""

    settings: SlackSettings
    readiness: Readiness
    port: Port
    gateway: GatewaySetup | None
    stop: Signals

    def ready(self, probes: Probes, line: str) -> None:
        """The probes say the bot serves; the start-up line (and the gateway's) is
        announced."""
        self.readiness.serving(probes)
        announce(line)
        if self.gateway is not None:
            announce(f"MCP gateway at {self.port.url}/mcp ({self.gateway.describe()})")


async def _start_work(
    service: ApprovalService, readiness: Readiness, environ: Mapping[str, str]
) -> None:
    """Finish what a dead process left, then start the expiry sweeper."""
    readiness.waiting("recovering the runs a previous process left")
    recovered = await service.recover()
    if recovered:
        log.info("recovered %d run(s) left by a previous process", recovered)
    service.start_expiry_sweeper(every_seconds=sweep_seconds_from_env(environ))


@contextlib.asynccontextmanager
async def _gateway_running(
    gateway: GatewaySetup | None, service: ApprovalService
) -> AsyncIterator[None]:
    if gateway is None:
        yield
        return
    async with gateway.running(service):
        yield


async def _serve_http(
    front: _Front,
    endpoint: StartingApp,
    surface: SlackSurface,
    probes: Probes,
    about: str,
    on_listening: Callable[[str], None] | None,
) -> None:
    from bot.slack.server import EVENTS_PATH

    endpoint.serve_slack(
        bolt_app=surface.bolt_app,
        signing_secret=front.settings.signing_secret,
        memory=surface.requests,
    )
    events_url = f"{front.port.url}{EVENTS_PATH}"
    front.ready(probes, f"serving Slack at {events_url} ({about})")
    if on_listening is not None:
        on_listening(events_url)
    await front.stop.serving()


async def _serve_socket(front: _Front, surface: SlackSurface, probes: Probes, about: str) -> None:
    from bot.slack.socket_mode import socket_mode

    assert front.settings.app_token is not None  # load_settings requires it in socket mode
    front.readiness.waiting("connecting to Slack over Socket Mode")
    async with socket_mode(surface.bolt_app, front.settings.app_token):
        url = front.port.url
        front.ready(
            probes, f"connected to Slack over Socket Mode; probes and metrics at {url} ({about})"
        )
        await front.stop.serving()


def started_line(
    settings: SlackSettings, *, environ: Mapping[str, str], surface: SlackSurface
) -> str:
    """What the start-up line says besides where it listens: the database (never its
    credentials), the policy and the agents."""
    database = without_credentials(settings.database_url or database_url_from_env(environ))
    policy = environ.get(POLICY_ENV, "").strip() or "built-in defaults"
    agents = ", ".join(sorted({agent.name for agent in surface.service.registry}))
    return f"database {database}, policy {policy}, agents {agents}"


def without_credentials(url: str) -> str:
    """`url` with any password in it replaced (a path is returned as it is)."""
    parts = urlsplit(url)
    if not parts.scheme or parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
