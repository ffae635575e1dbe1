"""`approvals-bot serve` (HTTP: Events API, interactivity, slash commands) and
`approvals-bot socket` (Socket Mode).

Both read their configuration from the environment (see bot.slack.config and the
README), open the model and the store, listen on HOST:PORT (the probes answer from then
on, saying what the bot waits for: bot.commands.serving), open the Slack surface
(`open_bot`, bot.commands.bot_opening: auth.test, tried again while Slack cannot be
reached), finish what a dead process left (`recover`), start
the expiry sweeper, take Slack's requests until SIGINT/SIGTERM, then stop listening,
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
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from bot.commands.bot_opening import open_bot
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
    from bot.slack.server import EVENTS_PATH, StartingApp

    metrics = Metrics()
    gateway = GatewaySetup.from_env(environ, metrics=metrics)  # APPROVALS_MCP, if set
    readiness = Readiness(metrics, reason="waiting for Slack: asking auth.test who the bot is")
    endpoint = StartingApp(readiness) if mode == "http" else None
    app = endpoint.app if endpoint else build_probe_app(readiness)
    if gateway is not None:
        gateway.mount(app)  # /mcp answers 503 until the gateway runs
    port = Port(app, settings)
    async with (
        open_bot(
            settings,
            environ=environ,
            metrics=metrics,
            gateway=gateway,
            before_slack=port.listening,
            waiting=readiness.waiting,
        ) as surface,
        _gateway_running(gateway, surface.service),
    ):
        readiness.waiting("recovering the runs a previous process left")
        recovered = await surface.service.recover()
        if recovered:
            log.info("recovered %d run(s) left by a previous process", recovered)
        surface.service.start_expiry_sweeper(every_seconds=sweep_seconds_from_env(environ))
        probes = Probes(
            service=surface.service,
            health=surface.health,
            metrics=metrics,
            detail=gateway.readiness if gateway is not None else None,
        )
        about = started_line(settings, environ=environ, surface=surface)
        if endpoint is not None:
            endpoint.serve_slack(
                bolt_app=surface.bolt_app,
                signing_secret=settings.signing_secret,
                memory=surface.requests,
            )
            readiness.serving(probes)
            announce(f"serving Slack at {port.url}{EVENTS_PATH} ({about})")
            _announce_gateway(gateway, port.url)
            if on_listening is not None:
                on_listening(f"{port.url}{EVENTS_PATH}")
            await stop.serving()
        else:
            await _serve_socket(surface, settings, readiness, probes, port, about, stop, gateway)
        if gateway is not None:
            gateway.stop_waiting()  # waiting MCP calls answer "still pending" now
        await port.close()  # no new request while the bot drains


@contextlib.asynccontextmanager
async def _gateway_running(
    gateway: GatewaySetup | None, service: ApprovalService
) -> AsyncIterator[None]:
    if gateway is None:
        yield
        return
    async with gateway.running(service):
        yield


def _announce_gateway(gateway: GatewaySetup | None, url: str) -> None:
    if gateway is not None:
        announce(f"MCP gateway at {url}/mcp ({gateway.describe()})")


async def _serve_socket(
    surface: SlackSurface,
    settings: SlackSettings,
    readiness: Readiness,
    probes: Probes,
    port: Port,
    about: str,
    stop: Signals,
    gateway: GatewaySetup | None,
) -> None:
    from bot.slack.socket_mode import socket_mode

    assert settings.app_token is not None  # load_settings requires it in socket mode
    readiness.waiting("connecting to Slack over Socket Mode")
    async with socket_mode(surface.bolt_app, settings.app_token):
        readiness.serving(probes)
        announce(f"connected to Slack over Socket Mode; probes and metrics at {port.url} ({about})")
        _announce_gateway(gateway, port.url)
        await stop.serving()


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
