"""Opening the serving bot: the model, the agents, the policy, the store, the service and
the Slack surface around them, each closed on the way out by whoever opened it. Every
configuration problem is refused before anything is opened.

The Slack side (aiohttp, Bolt, slack_sdk) is imported inside `open_bot`: the CLI's other
commands do not pay for it (bot.commands.serve).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

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
from bot.metrics import Metrics
from bot.policy.loading import policy_from_env
from bot.policy.rules import Policy
from bot.runtime import AgentRegistry
from bot.service import (
    ApprovalService,
    Notifier,
    TaskOwner,
    approval_ttl_from_env,
    installation_worker_id,
    lease_seconds_from_env,
    sweep_seconds_from_env,
)
from bot.slack.config import SlackSettings
from store import open_store
from store.api import Store
from store.config import SqliteLocation, database_url_from_env, parse_database_url

if TYPE_CHECKING:
    from bot.slack.gateway import SlackGateway
    from bot.slack.surface import SlackSurface


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
    from bot.slack.admission import start_gate_from_env
    from bot.slack.surface import SlackSurface

    starts = start_gate_from_env(environ)  # a bad value stops start-up before anything opens
    dependencies = ops_dependencies(environ)
    database_url = settings.database_url or database_url_from_env(environ)
    recipe = _ServiceRecipe(
        dependencies=dependencies,
        worker_id=installation_worker_id(database_url, environ),
        approval_ttl=approval_ttl_from_env(environ),
        lease_seconds=lease_seconds_from_env(environ),
        metrics=metrics,
        gateway=gateway,
    )
    sweep_seconds_from_env(environ)  # a bad value stops start-up before anything opens
    async with contextlib.AsyncExitStack() as stack:
        model = model_from_env(environ, metrics=metrics)
        stack.push_async_callback(close_model, model)
        registry = load_agent_registry(settings.agents, default=builtin_registry(model))
        policy = _policy(registry, environ, gateway)
        store = await open_store(database_url, environ=environ)
        stack.push_async_callback(store.close)
        # After the store opened (its errors name the database first), before anything
        # recovers, sweeps or listens.
        _hold_the_file(stack, database_url)
        make_service = partial(recipe.make, store=store, registry=registry, policy=policy)
        if before_slack is not None:
            await stack.enter_async_context(before_slack())
        surface = await SlackSurface.open(
            bot_token=settings.bot_token,
            signing_secret=settings.signing_secret,
            api_url=settings.api_url,
            make_service=make_service,
            metrics=metrics,
            waiting=waiting,
            starts=starts,
        )
        yield await stack.enter_async_context(surface)


def _policy(
    registry: AgentRegistry, environ: Mapping[str, str], gateway: GatewaySetup | None
) -> Policy | None:
    """The policy file's policy, every problem of it at once (None: no file; the service
    then applies the built-in defaults with APPROVALS_APPROVAL_TTL_SECONDS as their
    expiry). With a gateway, its engine is registered under it."""
    known = tool_names(registry)
    if gateway is not None:  # its upstreams list their tools only once they run
        known += gateway.tools_named_by_policy(environ)
    policy = policy_from_env(environ, known_tools=known)
    if gateway is not None:
        gateway.register(registry, policy)
    return policy


def _hold_the_file(stack: contextlib.AsyncExitStack, url: str) -> None:
    """One server per SQLite file (bot.commands.serve_lock), held until the stack
    closes; Postgres serves many (docs/production.md)."""
    location = parse_database_url(url)
    if isinstance(location, SqliteLocation):
        stack.enter_context(sole_server(location.path))


@dataclass(frozen=True, kw_only=True)
class _ServiceRecipe:
    """What the service the Slack surface makes is given besides its gateway and tasks
    (read from the environment before anything opens)."""

    dependencies: Mapping[str, Any]
    worker_id: str
    approval_ttl: timedelta | None
    lease_seconds: float
    metrics: Metrics | None
    gateway: GatewaySetup | None

    def make(
        self,
        slack: SlackGateway,
        tasks: TaskOwner,
        *,
        store: Store,
        registry: AgentRegistry,
        policy: Policy | None,
    ) -> ApprovalService:
        """The service over `store`, telling people through `slack` (and the gateway's
        run watch in front, with a gateway)."""
        from bot.slack.channels import SlackChannelDirectory
        from bot.slack.groups import SlackGroupDirectory
        from bot.slack.notifier import SlackNotifier

        notifier: Notifier = SlackNotifier(slack)
        if self.gateway is not None:
            notifier = self.gateway.watching(notifier)
        return ApprovalService(
            store=store,
            registry=registry,
            notifier=notifier,
            dependencies=self.dependencies,
            tasks=tasks,
            worker_id=self.worker_id,
            default_agent=registry.default().name,
            approval_ttl=self.approval_ttl,
            lease_seconds=self.lease_seconds,
            policy=policy,
            groups=SlackGroupDirectory(slack.client),
            channels=SlackChannelDirectory(slack.client),
            metrics=self.metrics,
        )
