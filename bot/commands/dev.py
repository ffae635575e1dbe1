"""`approvals-bot dev`: the whole bot on this machine, with a stand-in for Slack in the
browser (bot.devconsole).

The real bot, as `serve` runs it (the agents, model and policy from the environment, the
recovery and the sweeper), on its own SQLite file, listening on 127.0.0.1 at a free port;
its slack_sdk client talks to the console's Web API (SLACK_API_URL), and the console
delivers what people do on the page to the bot's `/slack/events`, signed with a secret
made for this run. Nothing here reaches into the service: the two meet over HTTP only.

Without APPROVALS_POLICY the bot runs bot/devconsole/policy.toml, which names the
console's approvers and admin; with one, the console's people are named after it (its
first two user approvers, its first admin, and its user groups hold the approvers).

The console (aiohttp) is imported when `dev` runs: `approvals-bot --help` and the other
commands do not pay for it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands.serve import serve
from bot.logs import configure_logging, log_settings_from_env
from bot.policy.loading import POLICY_ENV, load_policy
from bot.policy.rules import Policy, ToolRule
from bot.slack.config import load_settings

if TYPE_CHECKING:
    from bot.devconsole import Workspace

DEV_POLICY = Path(__file__).resolve().parent.parent / "devconsole" / "policy.toml"
DEFAULT_DATABASE = "./approvals-dev.db"
DEFAULT_PORT = 3000
TOUR = (
    "as {requester} type `/agent deploy payments 1.2.3`, switch to {approver} and press "
    "Approve on the card, give a reason, read the answer in the thread, then open Home "
    "(Ctrl-C stops)"
)


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "dev",
        help="run the whole bot locally, with a stand-in for Slack in your browser",
        description="Run the real bot (SQLite, the demo agents, the agents and policy of "
        "APPROVALS_AGENTS and APPROVALS_POLICY) with a local stand-in for Slack: a page "
        "on 127.0.0.1 showing the channel #ops, its threads, the bot's cards and modals "
        "and App Home, where you act as a requester, two approvers, an admin or an "
        "outsider. Every click reaches the bot as a signed Slack request; no Slack "
        "workspace or token is needed, and none is contacted. Without APPROVALS_POLICY "
        f"the policy is {DEV_POLICY.name} beside the console (Alice and Bob approve, Sam "
        "is admin). SLACK_* settings, HOST, PORT and APPROVALS_DATABASE_URL are ignored.",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"the page's port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)",
    )
    parser.add_argument(
        "--db",
        default=DEFAULT_DATABASE,
        help=f"the SQLite file of the dev bot (default {DEFAULT_DATABASE}; its key file "
        "is created beside it unless APPROVALS_KEYS is set)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging_settings = log_settings_from_env(os.environ)
    policy_file = os.environ.get(POLICY_ENV, "").strip() or str(DEV_POLICY)
    workspace = workspace_for(load_policy(policy_file))
    environ = {**os.environ, POLICY_ENV: policy_file, "APPROVALS_DATABASE_URL": args.db}
    configure_logging(logging_settings)
    # Every click is a request to the bot: the page shows them, the terminal need not.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    asyncio.run(develop(workspace=workspace, port=args.port, environ=environ))
    return 0


async def develop(*, workspace: Workspace, port: int, environ: Mapping[str, str]) -> None:
    """Serve the console and the bot until SIGINT/SIGTERM; the console outlives the bot,
    so a run finishing while the bot drains can still post to it."""
    from bot.devconsole import DevConsole, Secrets  # aiohttp: only when dev runs

    shared = Secrets.generate()
    async with DevConsole(workspace=workspace, shared=shared, port=port).running() as console:
        env = {
            **environ,
            "SLACK_BOT_TOKEN": shared.bot_token,
            "SLACK_SIGNING_SECRET": shared.signing_secret,
            "SLACK_API_URL": console.api_url,
            "HOST": "127.0.0.1",
            "PORT": "0",
        }
        env.pop("SLACK_APP_TOKEN", None)
        settings = load_settings(env, mode="http")

        def listening(events_url: str) -> None:
            console.connect(events_url)
            print(f"approvals-bot dev: open {console.url} ; {tour(workspace)}", file=sys.stderr)

        await serve(settings, mode="http", environ=env, on_listening=listening)


def tour(workspace: Workspace) -> str:
    def first(role: str) -> str:
        return next(p.name for p in workspace.people if p.role == role)

    return TOUR.format(requester=first("requester"), approver=first("approver"))


def workspace_for(policy: Policy) -> Workspace:
    """The console's people fitted to `policy`: its first two user approvers (else
    Alice and Bob, who may approve under an "anyone" rule by being in #ops), its first
    admin (else Sam), and every user group it names holding both approvers."""
    from bot.devconsole import ADMIN, APPROVERS, OUTSIDER, REQUESTER, Workspace

    fixed = {REQUESTER.id, ADMIN.id, OUTSIDER.id}
    named = [user for user in _user_approvers(policy) if user not in fixed]
    approver_ids = list(dict.fromkeys([*named, *(person.id for person in APPROVERS)]))[:2]
    approvers = tuple(
        replace(person, id=user) for person, user in zip(APPROVERS, approver_ids, strict=True)
    )
    admins = sorted(policy.admins - {REQUESTER.id, OUTSIDER.id, *approver_ids})
    admin = replace(ADMIN, id=admins[0]) if admins else ADMIN
    groups = {group: tuple(approver_ids) for group in _groups(policy)}
    return Workspace(people=(REQUESTER, *approvers, admin, OUTSIDER), groups=groups)


def _rules(policy: Policy) -> list[ToolRule]:
    return [policy.defaults, *(policy.tools[name] for name in sorted(policy.tools))]


def _user_approvers(policy: Policy) -> Iterator[str]:
    for rule in _rules(policy):
        yield from (user for user in rule.approvers if user in rule.user_approvers)


def _groups(policy: Policy) -> list[str]:
    return list(dict.fromkeys(group for rule in _rules(policy) for group in rule.group_approvers))
