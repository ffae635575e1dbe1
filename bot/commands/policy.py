"""`approvals-bot policy check FILE`: read an approval policy and report every problem.

All problems at once, one per line, each naming its key (not the first one only, as a
start-up that stops at once would), including `[tools.<name>]` tables for tools no agent
has: the agents are those the deployment runs (the ops agent, and APPROVALS_AGENTS), and
with APPROVALS_MCP the gateway's tools (`<upstream>__<tool>` of an upstream it names).
A good file prints the effective rule of each tool it names and of the defaults; exit 0.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path
from typing import Any

from bot.agents import AGENTS_ENV, builtin_registry, load_agent_registry
from bot.demo import OfflineOpsModel
from bot.mcp.config import MCP_ENV
from bot.mcp.config_file import load_gateway_config
from bot.policy.durations import format_duration
from bot.policy.loading import load_policy
from bot.policy.rules import Policy, ToolRule


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "policy", help="check an approval policy file", description="approval policy files"
    )
    group = parser.add_subparsers(dest="policy_command", metavar="COMMAND")
    check = group.add_parser(
        "check",
        help="report every problem of a policy file at once",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    check.add_argument("file", metavar="FILE", help="the policy TOML file")
    check.set_defaults(func=policy_check)
    parser.set_defaults(func=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def policy_check(args: argparse.Namespace) -> int:
    spec = os.environ.get(AGENTS_ENV, "").strip() or None
    registry = load_agent_registry(spec, default=builtin_registry(OfflineOpsModel()))
    tools = sorted({name for agent in registry for name in agent.tool_names()})
    tools += _gateway_tools(args.file)
    policy = load_policy(args.file, known_tools=tools)  # PolicyError: every problem
    print(render_policy(policy, tools))
    return 0


def _gateway_tools(policy_file: str) -> list[str]:
    """The names the policy file gives the MCP gateway's tools (APPROVALS_MCP): its
    upstreams list their tools only once they run, so any `<upstream>__<tool>` of an
    upstream it names. (A file that cannot be read names none; its check says why.)"""
    path = os.environ.get(MCP_ENV, "").strip()
    if not path:
        return []
    config = load_gateway_config(path)
    try:
        tables = tomllib.loads(Path(policy_file).read_text(encoding="utf-8")).get("tools")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    named = tables if isinstance(tables, dict) else {}
    return sorted(name for name in named if config.upstream_of(name) is not None)


def render_policy(policy: Policy, tools: list[str]) -> str:
    lines = [
        f"policy file {policy.source}: OK",
        f"admins: {', '.join(sorted(policy.admins)) or 'none'}",
        f"defaults: {describe(policy.defaults)}",
    ]
    lines += [f"tools.{name}: {describe(rule)}" for name, rule in sorted(policy.tools.items())]
    under_defaults = [name for name in tools if name not in policy.tools]
    if under_defaults:
        lines.append(f"under the defaults: {', '.join(under_defaults)}")
    return "\n".join(lines)


def describe(rule: ToolRule) -> str:
    expires = "never" if rule.expires_after is None else format_duration(rule.expires_after)
    return (
        f"approvers {', '.join(rule.approvers) or 'anyone'}; "
        f"{rule.required_approvals} approval(s); "
        f"self approval {'allowed' if rule.allow_self_approval else 'not allowed'}; "
        f"reason {'required' if rule.require_reason else 'optional'}; "
        f"expires after {expires}; remind {format_duration(rule.remind_before)} before; "
        f"for the rest of the run {'allowed' if rule.allow_always else 'not allowed'}"
    )
