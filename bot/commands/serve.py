"""`approvals-bot serve` and `approvals-bot socket`: their arguments and help.

The server itself (bot.commands.serving) imports aiohttp, Bolt, the service and the
store: about half of the CLI's start-up. It is imported only when one of these commands
runs, so `approvals-bot --help`, `demo` and the operator commands do not pay for it.
"""

from __future__ import annotations

import argparse
from typing import Any, Literal


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register `serve` and `socket`."""
    serve = subparsers.add_parser(
        "serve",
        help="serve Slack over HTTP at POST /slack/events (and GET /healthz)",
        description="Serve Slack over HTTP. Configuration comes from the environment: "
        "SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_API_URL, HOST, PORT, "
        "APPROVALS_DATABASE_URL, APPROVALS_KEYS, APPROVALS_AGENTS, APPROVALS_POLICY, "
        "APPROVALS_MODEL.",
    )
    serve.set_defaults(func=lambda args: _run("http"))
    socket_mode = subparsers.add_parser(
        "socket",
        help="serve Slack over Socket Mode (needs SLACK_APP_TOKEN)",
        description="Serve Slack over Socket Mode: no public URL needed. Same environment "
        "as `serve`, plus SLACK_APP_TOKEN (xapp-...).",
    )
    socket_mode.set_defaults(func=lambda args: _run("socket"))


def _run(mode: Literal["http", "socket"]) -> int:
    from bot.commands.serving import run

    return run(mode)
