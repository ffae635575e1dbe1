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
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from bot.agents import close_model, load_agent_registry, model_from_env
from bot.commands.serve_lock import sole_server
from bot.demo import default_registry, ops_dependencies
from bot.policy.loading import POLICY_ENV, load_policy
from bot.service import (
    ApprovalService,
    TaskOwner,
    approval_ttl_from_env,
    installation_worker_id,
    lease_seconds_from_env,
    sweep_seconds_from_env,
)
from bot.slack.config import Mode, SlackSettings, load_settings
from store.config import database_url_from_env, parse_database_url
from store.sqlite.store import open_store

if TYPE_CHECKING:
    from bot.slack.gateway import SlackGateway
    from bot.slack.surface import SlackSurface

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register `serve` and `socket`."""
    serve_http = subparsers.add_parser(
        "serve",
        help="serve Slack over HTTP at POST /slack/events (and GET /healthz)",
        description="Serve Slack over HTTP. Configuration comes from the environment: "
        "SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_API_URL, HOST, PORT, "
        "APPROVALS_DATABASE_URL, APPROVALS_KEYS, APPROVALS_AGENTS, APPROVALS_POLICY, "
        "APPROVALS_MODEL.",
    )
    serve_http.set_defaults(func=lambda args: run("http"))
    socket_mode = subparsers.add_parser(
        "socket",
        help="serve Slack over Socket Mode (needs SLACK_APP_TOKEN)",
        description="Serve Slack over Socket Mode: no public URL needed. Same environment "
        "as `serve`, plus SLACK_APP_TOKEN (xapp-...).",
    )
    socket_mode.set_defaults(func=lambda args: run("socket"))


def run(mode: Mode) -> int:
    """Serve in `mode` until stopped (the body of `approvals-bot serve` / `socket`)."""
    settings = load_settings(os.environ, mode=mode)
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO").upper())
    asyncio.run(serve(settings, mode=mode, environ=os.environ))
    return 0


async def serve(settings: SlackSettings, *, mode: Mode, environ: Mapping[str, str]) -> None:
    async with open_bot(settings, environ=environ) as surface:
        recovered = await surface.service.recover()
        if recovered:
            log.info("recovered %d run(s) left by a previous process", recovered)
        surface.service.start_expiry_sweeper(every_seconds=sweep_seconds_from_env(environ))
        if mode == "http":
            await _serve_http(surface, settings)
        else:
            await _serve_socket(surface, settings)


@contextlib.asynccontextmanager
async def open_bot(
    settings: SlackSettings, *, environ: Mapping[str, str]
) -> AsyncIterator[SlackSurface]:
    """The model, the store, the registry, the service and the Slack surface around
    them, open for the block; each is closed on the way out by the one who opened it,
    in reverse order. Every configuration problem is a ConfigError before anything is
    opened (the agents module, too, before the database); so is a second server on one
    SQLite file (bot.commands.serve_lock)."""
    from bot.slack.channels import SlackChannelDirectory
    from bot.slack.groups import SlackGroupDirectory
    from bot.slack.notifier import SlackNotifier
    from bot.slack.surface import SlackSurface

    database_url = settings.database_url or database_url_from_env(environ)
    # Without a policy file the service applies the built-in defaults with
    # APPROVALS_APPROVAL_TTL_SECONDS as their expiry.
    policy = load_policy(environ=environ) if environ.get(POLICY_ENV, "").strip() else None
    dependencies = ops_dependencies(environ)
    worker_id = installation_worker_id(database_url, environ)
    approval_ttl = approval_ttl_from_env(environ)
    lease_seconds = lease_seconds_from_env(environ)
    sweep_seconds_from_env(environ)  # a bad value stops start-up before anything opens
    async with contextlib.AsyncExitStack() as stack:
        stack.enter_context(sole_server(parse_database_url(database_url).path))
        model = model_from_env(environ)
        stack.push_async_callback(close_model, model)
        registry = load_agent_registry(settings.agents, default=default_registry(model))
        store = await open_store(database_url, environ=environ)
        stack.push_async_callback(store.close)

        def make_service(slack: SlackGateway, tasks: TaskOwner) -> ApprovalService:
            return ApprovalService(
                store=store,
                registry=registry,
                notifier=SlackNotifier(slack),
                dependencies=dependencies,
                tasks=tasks,
                worker_id=worker_id,
                default_agent=registry.default().name,
                approval_ttl=approval_ttl,
                lease_seconds=lease_seconds,
                policy=policy,
                groups=SlackGroupDirectory(slack.client),
                channels=SlackChannelDirectory(slack.client),
            )

        surface = await SlackSurface.open(
            bot_token=settings.bot_token,
            signing_secret=settings.signing_secret,
            api_url=settings.api_url,
            make_service=make_service,
        )
        yield await stack.enter_async_context(surface)


async def _serve_http(surface: SlackSurface, settings: SlackSettings) -> None:
    from aiohttp import web

    from bot.slack.server import EVENTS_PATH, build_web_app

    runner = web.AppRunner(
        build_web_app(
            bolt_app=surface.bolt_app,
            signing_secret=settings.signing_secret,
            memory=surface.requests,
        )
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.host, settings.port).start()
        host, port = runner.addresses[0][:2]
        await _until_stopped(f"approvals-bot: serving Slack at http://{host}:{port}{EVENTS_PATH}")
    finally:
        await runner.cleanup()


async def _serve_socket(surface: SlackSurface, settings: SlackSettings) -> None:
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(surface.bolt_app, settings.app_token)
    await handler.connect_async()  # type: ignore[no-untyped-call]
    try:
        await _until_stopped("approvals-bot: connected to Slack over Socket Mode")
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]


async def _until_stopped(ready: str) -> None:
    """Print `ready` once SIGINT and SIGTERM stop us cleanly, then wait for one."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        print(ready, file=sys.stderr)
        await stop.wait()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
