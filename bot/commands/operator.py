"""The approval service as operators use it from the CLI (surface "cli").

`approvals decide`, `approvals revoke`, `runs cancel` and `runs resume` act through the
same ApprovalService as the bot, with the same rules (policy, self approval, quorum,
expiry, the digest shown and checked again), on the existing database. A decision that
completes a run's approvals resumes the run here, in this process, so the command is run
with the bot's environment: the same APPROVALS_* settings and the agents' own secrets
(OPS_API_TOKEN ...). Its worker id is its own (`cli:<user>:<pid>`), never the bot's: it
cannot take over a live process's leases.

People are told here (the terminal) and, when SLACK_BOT_TOKEN is set, in the run's Slack
thread as the bot would (cards updated in place, the answer, the cancellation). Without
a token nothing reaches Slack: the audit log records the action with `via: cli`, and a
card left showing buttons answers any click with what happened. The members of the
policy's user groups come from Slack with a token, else from `--groups-from FILE`
(bot.commands.groups); without either, a group has no members here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, TextIO

from bot.agents import (
    AGENTS_ENV,
    builtin_registry,
    close_model,
    load_agent_registry,
    model_from_env,
    tool_names,
)
from bot.commands.database import existing_store, os_user
from bot.commands.groups import terminal_groups
from bot.commands.terminal import Fanout, TerminalNotifier
from bot.demo import ops_dependencies
from bot.policy.eligibility import GroupDirectory
from bot.policy.loading import policy_from_env
from bot.service import (
    ApprovalService,
    Notifier,
    TaskOwner,
    approval_ttl_from_env,
    lease_seconds_from_env,
)
from bot.slack.config import web_api_from_env

if TYPE_CHECKING:
    from bot.slack.gateway import SlackGateway

_NOT_IN_ID = re.compile(r"[^A-Za-z0-9._-]+")
CLOSE_SECONDS = 60.0


def cli_worker_id() -> str:
    """This command's own worker id (see the module doc)."""
    user = _NOT_IN_ID.sub("-", os_user())[:40].strip("-") or "operator"
    return f"cli:{user}:{os.getpid()}"


@contextlib.asynccontextmanager
async def operator_service(
    args: argparse.Namespace,
    *,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
) -> AsyncIterator[ApprovalService]:
    """The service over the existing database (see the module doc); every configuration
    problem is a ConfigError before the database is opened. Closed on the way out, after
    the work it started (resumes) finished, for up to CLOSE_SECONDS."""
    env = os.environ if environ is None else environ
    approval_ttl = approval_ttl_from_env(env)
    lease_seconds = lease_seconds_from_env(env)
    dependencies = ops_dependencies(env)
    slack = web_api_from_env(env)
    known_groups = terminal_groups(args, asks_slack=slack is not None)  # a file, or Slack's
    async with contextlib.AsyncExitStack() as stack:
        model = model_from_env(env)
        stack.push_async_callback(close_model, model)
        spec = env.get(AGENTS_ENV, "").strip() or None
        registry = load_agent_registry(spec, default=builtin_registry(model))
        policy = policy_from_env(env, known_tools=tool_names(registry))  # every problem
        store = await stack.enter_async_context(existing_store(args))
        notifiers: list[Notifier] = [TerminalNotifier(out or sys.stdout)]
        groups: GroupDirectory | None = known_groups
        if slack is not None:
            gateway = await stack.enter_async_context(_slack_gateway(*slack))
            notifiers.append(_slack_notifier(gateway))
            groups = groups or _slack_groups(gateway)
        service = ApprovalService(
            store=store,
            registry=registry,
            notifier=Fanout(notifiers),
            dependencies=dependencies,
            tasks=TaskOwner(),
            worker_id=cli_worker_id(),
            default_agent=registry.default().name,
            approval_ttl=approval_ttl,
            lease_seconds=lease_seconds,
            policy=policy,
            groups=groups,
            surface="cli",
        )
        # A resume this command started (its decision completed a run, or an expired
        # approval let the run go on) finishes before the command exits, even when the
        # command ends in an error; a second Ctrl-C stops waiting.
        stack.push_async_callback(service.aclose, timeout=CLOSE_SECONDS)
        yield service


@contextlib.asynccontextmanager
async def _slack_gateway(token: str, api_url: str) -> AsyncIterator[SlackGateway]:
    # Imported here: Slack's libraries are half of the CLI's start-up time.
    import aiohttp

    from bot.slack.gateway import SlackGateway

    async with aiohttp.ClientSession() as session:
        yield SlackGateway.open(token=token, api_url=api_url, session=session)


def _slack_notifier(gateway: SlackGateway) -> Notifier:
    from bot.slack.notifier import SlackNotifier

    return SlackNotifier(gateway)


def _slack_groups(gateway: SlackGateway) -> GroupDirectory:
    from bot.slack.groups import SlackGroupDirectory

    return SlackGroupDirectory(gateway.client)
