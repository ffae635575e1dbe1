"""`approvals-bot serve` (HTTP: Events API, interactivity, slash commands) and
`approvals-bot socket` (Socket Mode).

Both read their configuration from the environment (see bot.slack.config and the
README), open the model, the store and the Slack surface (`open_bot`), finish what a
dead process left (`recover`), start the expiry sweeper, serve until SIGINT/SIGTERM,
then drain the tasks they own and close everything, each part by whoever opened it.

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
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from bot.agents import builtin_registry, close_model, load_agent_registry, model_from_env
from bot.commands.mcp_gateway import GatewaySetup
from bot.commands.serve_lock import sole_server
from bot.demo import ops_dependencies
from bot.errors import ConfigError
from bot.logs import configure_logging, log_settings_from_env
from bot.metrics import Metrics
from bot.policy.loading import POLICY_ENV, load_policy
from bot.service import (
    ApprovalService,
    Notifier,
    TaskOwner,
    approval_ttl_from_env,
    installation_worker_id,
    lease_seconds_from_env,
    sweep_seconds_from_env,
)
from bot.slack.config import Mode, SlackSettings, load_settings
from store import open_store
from store.config import SqliteLocation, database_url_from_env, parse_database_url

if TYPE_CHECKING:
    from aiohttp import web

    from bot.mcp.http import McpEndpoint
    from bot.slack.gateway import SlackGateway
    from bot.slack.probes import Probes
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
    logging_settings = log_settings_from_env(os.environ)
    settings = load_settings(os.environ, mode=mode)
    configure_logging(logging_settings)
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
    `on_listening` (HTTP mode) is told the events URL once it listens (`dev` uses it)."""
    with _Signals() as stop:
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
    stop: _Signals,
    on_listening: Callable[[str], None] | None,
) -> None:
    metrics = Metrics()
    gateway = GatewaySetup.from_env(environ, metrics=metrics)  # APPROVALS_MCP, if set
    async with (
        open_bot(settings, environ=environ, metrics=metrics, gateway=gateway) as surface,
        _gateway_running(gateway, surface.service) as mcp,
    ):
        recovered = await surface.service.recover()
        if recovered:
            log.info("recovered %d run(s) left by a previous process", recovered)
        surface.service.start_expiry_sweeper(every_seconds=sweep_seconds_from_env(environ))
        from bot.slack.probes import Probes

        probes = Probes(
            service=surface.service,
            health=surface.health,
            metrics=metrics,
            detail=gateway.readiness if gateway is not None else None,
        )
        about = started_line(settings, environ=environ, surface=surface)
        served = _Served(probes=probes, about=about, mcp=mcp, gateway=gateway)
        if mode == "http":
            await _serve_http(surface, settings, served, stop, on_listening)
        else:
            await _serve_socket(surface, settings, served, stop)


@contextlib.asynccontextmanager
async def _gateway_running(
    gateway: GatewaySetup | None, service: ApprovalService
) -> AsyncIterator[McpEndpoint | None]:
    if gateway is None:
        yield None
        return
    async with gateway.running(service) as endpoint:
        yield endpoint


@dataclass(frozen=True, kw_only=True)
class _Served:
    """What `serve` and `socket` serve besides Slack: the probes, and the MCP gateway."""

    probes: Probes
    about: str
    mcp: McpEndpoint | None
    gateway: GatewaySetup | None

    def mount(self, app: web.Application) -> None:
        if self.mcp is not None:
            self.mcp.add_routes(app)

    def announce(self, host: str, port: int) -> None:
        if self.gateway is not None:
            print(
                f"approvals-bot: MCP gateway at http://{host}:{port}/mcp "
                f"({self.gateway.describe()})",
                file=sys.stderr,
            )

    def stopping(self) -> None:
        if self.gateway is not None:
            self.gateway.stop_waiting()


@contextlib.asynccontextmanager
async def open_bot(
    settings: SlackSettings,
    *,
    environ: Mapping[str, str],
    metrics: Metrics | None = None,
    gateway: GatewaySetup | None = None,
) -> AsyncIterator[SlackSurface]:
    """The model, the store, the registry, the service and the Slack surface around
    them, open for the block; each is closed on the way out by the one who opened it,
    in reverse order. Every configuration problem is a ConfigError before anything is
    opened (the agents module, too, before the database); so is a second server on one
    SQLite file (bot.commands.serve_lock). With a `gateway` (the MCP gateway), its engine
    is registered and its run watch put in front of the Slack notifier."""
    from bot.slack.channels import SlackChannelDirectory
    from bot.slack.groups import SlackGroupDirectory
    from bot.slack.notifier import SlackNotifier
    from bot.slack.surface import SlackSurface

    # Without a policy file the service applies the built-in defaults with
    # APPROVALS_APPROVAL_TTL_SECONDS as their expiry.
    policy = load_policy(environ=environ) if environ.get(POLICY_ENV, "").strip() else None
    dependencies = ops_dependencies(environ)
    database_url = settings.database_url or database_url_from_env(environ)
    worker_id = installation_worker_id(database_url, environ)
    approval_ttl = approval_ttl_from_env(environ)
    lease_seconds = lease_seconds_from_env(environ)
    sweep_seconds_from_env(environ)  # a bad value stops start-up before anything opens
    async with contextlib.AsyncExitStack() as stack:
        model = model_from_env(environ, metrics=metrics)
        stack.push_async_callback(close_model, model)
        registry = load_agent_registry(settings.agents, default=builtin_registry(model))
        if gateway is not None:
            gateway.register(registry, policy)
        store = await open_store(database_url, environ=environ)
        stack.push_async_callback(store.close)
        location = parse_database_url(database_url)
        if isinstance(location, SqliteLocation):  # Postgres serves many (docs/production.md)
            # After the store opened (its errors name the database first), before anything
            # recovers, sweeps or listens.
            stack.enter_context(sole_server(location.path))

        def make_service(slack: SlackGateway, tasks: TaskOwner) -> ApprovalService:
            notifier: Notifier = SlackNotifier(slack)
            if gateway is not None:
                notifier = gateway.watching(notifier)
            return ApprovalService(
                store=store,
                registry=registry,
                notifier=notifier,
                dependencies=dependencies,
                tasks=tasks,
                worker_id=worker_id,
                default_agent=registry.default().name,
                approval_ttl=approval_ttl,
                lease_seconds=lease_seconds,
                policy=policy,
                groups=SlackGroupDirectory(slack.client),
                channels=SlackChannelDirectory(slack.client),
                metrics=metrics,
            )

        surface = await SlackSurface.open(
            bot_token=settings.bot_token,
            signing_secret=settings.signing_secret,
            api_url=settings.api_url,
            make_service=make_service,
            metrics=metrics,
        )
        yield await stack.enter_async_context(surface)


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


async def _serve_http(
    surface: SlackSurface,
    settings: SlackSettings,
    served: _Served,
    stop: _Signals,
    on_listening: Callable[[str], None] | None,
) -> None:
    from bot.slack.server import EVENTS_PATH, build_web_app

    app = build_web_app(
        bolt_app=surface.bolt_app,
        signing_secret=settings.signing_secret,
        memory=surface.requests,
        probes=served.probes,
    )
    served.mount(app)
    async with _listening(app, settings) as (host, port):
        url = f"http://{host}:{port}{EVENTS_PATH}"
        print(f"approvals-bot: serving Slack at {url} ({served.about})", file=sys.stderr)
        served.announce(host, port)
        if on_listening is not None:
            on_listening(url)
        await stop.serving()
        served.stopping()


async def _serve_socket(
    surface: SlackSurface, settings: SlackSettings, served: _Served, stop: _Signals
) -> None:
    from bot.slack.probes import build_probe_app
    from bot.slack.socket_mode import socket_mode

    assert settings.app_token is not None  # load_settings requires it in socket mode
    app = build_probe_app(served.probes)
    served.mount(app)
    async with (
        _listening(app, settings) as (host, port),
        socket_mode(surface.bolt_app, settings.app_token),
    ):
        print(
            "approvals-bot: connected to Slack over Socket Mode; probes and metrics at "
            f"http://{host}:{port} ({served.about})",
            file=sys.stderr,
        )
        served.announce(host, port)
        await stop.serving()
        served.stopping()


@contextlib.asynccontextmanager
async def _listening(
    app: web.Application, settings: SlackSettings
) -> AsyncIterator[tuple[str, int]]:
    """Serve `app` on HOST:PORT for the block; (host, port) as bound. A port in use or
    a HOST that does not resolve is a ConfigError in one line."""
    from aiohttp import web

    runner = web.AppRunner(app)
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


class _Signals:
    """SIGINT and SIGTERM for the whole command: while starting, a signal cancels the
    start-up (its `async with` blocks close what they opened); once serving, it ends
    `serving()`, and the bot drains and closes as usual."""

    def __init__(self) -> None:
        self._stopped = asyncio.Event()
        self._task = asyncio.current_task()
        self._serving = False
        self.cancelled_start = False

    def __enter__(self) -> _Signals:
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
