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
from dataclasses import asdict
from typing import Any

from bot.agents import AGENTS_ENV, builtin_registry, load_agent_registry, tool_names
from bot.commands.json_output import print_json
from bot.demo import OfflineOpsModel
from bot.mcp.config_file import gateway_tools_named
from bot.policy.durations import format_duration
from bot.policy.loading import load_policy
from bot.policy.routing import Routing
from bot.policy.rules import Policy, PolicyError, ToolRule
from bot.policy.windows import describe_window


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
    check.add_argument(
        "--json",
        action="store_true",
        help='one JSON object instead of text: the effective rules, or {"ok": false, '
        '"problems": [...]} (exit 2)',
    )
    check.set_defaults(func=policy_check)
    parser.set_defaults(func=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def policy_check(args: argparse.Namespace) -> int:
    spec = os.environ.get(AGENTS_ENV, "").strip() or None
    registry = load_agent_registry(spec, default=builtin_registry(OfflineOpsModel()))
    tools = tool_names(registry) + gateway_tools_named(args.file, os.environ)
    try:
        policy = load_policy(args.file, known_tools=tools)  # PolicyError: every problem
    except PolicyError as error:
        if not args.json:
            raise
        print_json({"ok": False, "source": error.source, "problems": list(error.problems)})
        return 2
    if args.json:
        print_json(policy_json(policy, tools))
    else:
        print(render_policy(policy, tools))
    return 0


def policy_json(policy: Policy, tools: list[str]) -> dict[str, Any]:
    """The effective policy as `policy check --json` prints it."""
    return {
        "ok": True,
        "source": policy.source,
        "admins": sorted(policy.admins),
        "allow_external_users": policy.allow_external_users,
        "defaults": rule_json(policy.defaults),
        "tools": {name: rule_json(rule) for name, rule in sorted(policy.tools.items())},
        "under_defaults": [name for name in tools if name not in policy.tools],
        "limits": asdict(policy.limits),
    }


def rule_json(rule: ToolRule) -> dict[str, Any]:
    expires = None if rule.expires_after is None else format_duration(rule.expires_after)
    return {
        "approvers": list(rule.approvers),
        "required_approvals": rule.required_approvals,
        "allow_self_approval": rule.allow_self_approval,
        "require_reason": rule.require_reason,
        "expires_after": expires,
        "remind_before": format_duration(rule.remind_before),
        "allow_always": rule.allow_always,
        "allow_window": None if rule.allow_window is None else format_duration(rule.allow_window),
        "window_match": list(rule.window_match),
        "mode": rule.mode,
        "routing": routing_json(rule.routing),
    }


def routing_json(routing: Routing) -> dict[str, Any]:
    return {
        "notify": routing.notify,
        "max_dms": routing.max_dms,
        "escalation": [
            {"after": format_duration(step.after), "to": list(step.to)}
            for step in routing.escalation
        ],
        "notify_requester": routing.notify_requester,
    }


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
        f"{describe_window(rule.allow_window, rule.window_match, rule.mode)}"
        f"{describe_routing(rule.routing)}"
    )


def describe_routing(routing: Routing) -> str:
    """The routing keys that differ from the defaults, as `; key value` parts."""
    parts = []
    if routing.notify != "channel":
        parts.append(f"card to {routing.notify} (at most {routing.max_dms} DMs)")
    for step in routing.escalation:
        parts.append(f"escalates after {format_duration(step.after)} to {', '.join(step.to)}")
    if routing.notify_requester != "thread":
        parts.append(f"requester told by {routing.notify_requester}")
    return "".join(f"; {part}" for part in parts)
