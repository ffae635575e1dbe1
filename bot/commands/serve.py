"""`approvals-bot serve` (HTTP: Events API, interactivity, slash commands) and
`approvals-bot socket` (Socket Mode).

Both read their configuration from the environment (see bot.slack.config and the
README), open the model and the store, listen on HOST:PORT (the probes answer from then
on, saying what the bot waits for), open the Slack surface (`open_bot`: auth.test, tried
again while Slack cannot be reached), finish what a dead process left (`recover`), start
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
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from bot.agents import (
    builtin_registry,
    close_model,
    load_agent_registry,
    model_from_env,
    tool_names,
)
from bot.commands.mcp_gateway import GatewaySetup
from bot.commands.serve_lock import sole_server
from bot.demo import ops_dependencies
from bot.errors import ConfigError
from bot.logs import announce, configure_logging, log_settings_from_env
from bot.metrics import Metrics
from bot.policy.loading import POLICY_ENV, policy_from_env
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

    from bot.slack.gateway import SlackGateway
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
    port = _Port(app, settings)
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
    port: _Port,
    about: str,
    stop: _Signals,
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


@contextlib.asynccontextmanager
async def open_bot(
    settings: SlackSettings,
    *,
    environ: Mapping[str, str],
    metrics: Metrics | None = None,
    gateway: GatewaySetup | None = None,
    before_slack: Callable[[], AbstractAsyncContextManager[object]] | None = None,
    waiting: Callable[[str], None] | None = None,
) -> AsyncIterator[SlackSurface]:
    """The model, the store, the registry, the service and the Slack surface around
    them, open for the block; each is closed on the way out by the one who opened it,
    in reverse order. Every configuration problem is a ConfigError before anything is
    opened (the agents module, too, before the database); so is a second server on one
    SQLite file (bot.commands.serve_lock). `before_slack` is entered once the store is
    open, before Slack is asked who the bot is (serve listens there); `waiting` hears
    why, each time Slack cannot be reached. With a `gateway` (the MCP gateway), its
    engine is registered and its run watch put in front of the Slack notifier."""
    from bot.slack.channels import SlackChannelDirectory
    from bot.slack.groups import SlackGroupDirectory
    from bot.slack.notifier import SlackNotifier
    from bot.slack.surface import SlackSurface

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
        # Every problem of the policy at once. Without a policy file the service applies
        # the built-in defaults with APPROVALS_APPROVAL_TTL_SECONDS as their expiry.
        known = tool_names(registry)
        if gateway is not None:  # its upstreams list their tools only once they run
            known += gateway.tools_named_by_policy(environ)
        policy = policy_from_env(environ, known_tools=known)
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

        if before_slack is not None:
            await stack.enter_async_context(before_slack())
        surface = await SlackSurface.open(
            bot_token=settings.bot_token,
            signing_secret=settings.signing_secret,
            api_url=settings.api_url,
            make_service=make_service,
            metrics=metrics,
            waiting=waiting,
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


@contextlib.asynccontextmanager
async def _listening(
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


class _Port:
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
                _listening(self._app, self._settings)
            )
            self.url = f"http://{host}:{port}"
            announce(f"listening at {self.url} (/healthz, /readyz, /metrics); reaching Slack")
            yield

    async def close(self) -> None:
        await self._stack.aclose()


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
