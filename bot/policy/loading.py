"""Reading a policy: the TOML file `APPROVALS_POLICY` names (the format: bot.policy's
doc), every problem of it collected and reported at once."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.errors import ConfigError
from bot.policy.durations import parse_duration
from bot.policy.routing import ROUTING_KEYS, check_routing, read_routing
from bot.policy.rules import (
    DEFAULT_POLICY,
    SLACK_GROUP_ID,
    SLACK_USER_ID,
    Limits,
    Policy,
    PolicyError,
    ToolRule,
    no_such_tool,
)
from bot.policy.windows import WINDOW_KEYS, check_window, read_window

POLICY_ENV = "APPROVALS_POLICY"
_RULE_KEYS = frozenset(
    {
        "approvers",
        "required_approvals",
        "allow_self_approval",
        "require_reason",
        "expires_after",
        "remind_before",
        "allow_always",
    }
)
_TOP_KEYS = frozenset({"admins", "allow_external_users", "defaults", "tools", "limits"})
# The highest value a limit may have. Approvals: the service reads at most 10,000 rows of
# a run, so every pending approval of a run must fit well inside that. Task: Slack cuts
# a message's text at 40,000 characters, and the task is reposted as the root message.
_LIMIT_CEILINGS = {
    "tool_calls_per_turn": 1000,
    "pending_approvals_per_run": 1000,
    "task_chars": 40_000,
}


def load_policy(
    path: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    known_tools: Iterable[str] | None = None,
) -> Policy:
    """The policy in `path`, else in `$APPROVALS_POLICY`, else the built-in defaults.
    With `known_tools`, a `[tools.<name>]` table for any other tool is a problem too."""
    env = os.environ if environ is None else environ
    chosen = path if path is not None else env.get(POLICY_ENV, "").strip() or None
    if chosen is None:
        return DEFAULT_POLICY
    file = Path(chosen).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"policy file {chosen}: cannot read it ({error.strerror})") from None
    return parse_policy(text, source=str(file), known_tools=known_tools)


def policy_from_env(environ: Mapping[str, str], *, known_tools: Iterable[str]) -> Policy | None:
    """The policy `$APPROVALS_POLICY` names, read with every problem reported at once,
    `[tools.<name>]` tables for tools outside `known_tools` (the agents' tools) among
    them; None when it is unset (the service then applies the built-in defaults)."""
    if not environ.get(POLICY_ENV, "").strip():
        return None
    return load_policy(environ=environ, known_tools=known_tools)


def parse_policy(
    text: str, *, source: str = "<policy>", known_tools: Iterable[str] | None = None
) -> Policy:
    """Parse policy TOML; PolicyError (a ConfigError) names `source` and, for every
    problem, the key and the problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PolicyError(source, [f"not valid TOML: {error}"]) from None
    known = None if known_tools is None else frozenset(known_tools)
    return _Parser(source, known).policy(data)


class _Parser:
    """Reads a policy table by table, collecting every problem instead of stopping at the
    first; a problem leaves the value it concerns at its default so that reading goes on
    (a file with problems is never used: `finish` raises them all)."""

    def __init__(self, source: str, known_tools: frozenset[str] | None = None) -> None:
        self.source = source
        self.known_tools = known_tools
        self.problems: list[str] = []

    def fail(self, key: str, problem: str) -> None:
        self.problems.append(f"{key}: {problem}")

    def finish(self, policy: Policy) -> Policy:
        if self.problems:
            raise PolicyError(self.source, self.problems)
        return policy

    def policy(self, data: Mapping[str, Any]) -> Policy:
        self.unknown(data, _TOP_KEYS, "")
        admins = frozenset(self.ids(data.get("admins", []), "admins", groups=False))
        defaults_table = self.table(data.get("defaults", {}), "defaults")
        defaults = self.rule(defaults_table, ToolRule(), "defaults")
        tools: dict[str, ToolRule] = {}
        for name, table in self.table(data.get("tools", {}), "tools").items():
            prefix = f"tools.{name}"
            if self.known_tools is not None and name not in self.known_tools:
                self.fail(prefix, no_such_tool(name, self.known_tools))
            tools[name] = self.rule(self.table(table, prefix), defaults, prefix)
        external = data.get("allow_external_users", False)
        if type(external) is not bool:
            self.fail("allow_external_users", "must be true or false")
            external = False
        limits = self.limits(self.table(data.get("limits", {}), "limits"))
        policy = Policy(
            defaults=defaults,
            tools=tools,
            admins=admins,
            allow_external_users=external,
            limits=limits,
            source=self.source,
        )
        return self.finish(policy)

    def limits(self, table: Mapping[str, Any]) -> Limits:
        self.unknown(table, frozenset(_LIMIT_CEILINGS), "limits")
        values: dict[str, int] = {}
        for key, ceiling in _LIMIT_CEILINGS.items():
            if key not in table:
                continue
            value = table[key]
            if type(value) is not int or value < 1:
                self.fail(f"limits.{key}", "must be a whole number >= 1")
            elif value > ceiling:
                self.fail(f"limits.{key}", f"must be at most {ceiling}")
            else:
                values[key] = value
        return Limits(**values)

    def rule(self, table: Mapping[str, Any], base: ToolRule, prefix: str) -> ToolRule:
        self.unknown(table, _RULE_KEYS | ROUTING_KEYS | WINDOW_KEYS, prefix)
        rule = base
        if "approvers" in table:
            approvers = self.ids(table["approvers"], f"{prefix}.approvers", groups=True)
            rule = replace(rule, approvers=tuple(approvers))
        if "required_approvals" in table:
            value = table["required_approvals"]
            if type(value) is not int or value < 1:
                self.fail(f"{prefix}.required_approvals", "must be a whole number >= 1")
            else:
                rule = replace(rule, required_approvals=value)
        for flag in ("allow_self_approval", "require_reason", "allow_always"):
            if flag in table:
                if type(table[flag]) is not bool:
                    self.fail(f"{prefix}.{flag}", "must be true or false")
                else:
                    rule = replace(rule, **{flag: table[flag]})
        if "expires_after" in table:
            expires = self.duration(table, "expires_after", prefix)
            rule = rule if expires is None else replace(rule, expires_after=expires)
        if "remind_before" in table:
            remind = self.duration(table, "remind_before", prefix)
            rule = rule if remind is None else replace(rule, remind_before=remind)
        routing = read_routing(table, rule.routing, prefix, fail=self.fail, ids=self.any_ids)
        rule = replace(rule, routing=routing, **read_window(table, prefix, self.fail))
        self.possible(rule, table, prefix)
        check_window(table, prefix, self.fail, allow_window=rule.allow_window,
                     window_match=rule.window_match, allow_always=rule.allow_always,
                     required_approvals=rule.required_approvals, mode=rule.mode)  # fmt: skip
        check_routing(routing, table, prefix, approvers=rule.approvers,
                      expires_after=rule.expires_after, fail=self.fail)  # fmt: skip
        return rule

    def duration(self, table: Mapping[str, Any], key: str, prefix: str) -> timedelta | None:
        try:
            return parse_duration(table[key], allow_zero=key == "remind_before")
        except ValueError as error:
            self.fail(f"{prefix}.{key}", str(error))
            return None

    def possible(self, rule: ToolRule, table: Mapping[str, Any], prefix: str) -> None:
        """Rules that could never work as written. Reported where the rule is written
        (a table that changes neither key inherits a problem already reported)."""
        quorum_set = "required_approvals" in table or "approvers" in table
        if rule.approvers and not rule.group_approvers and quorum_set:
            listed = len(rule.user_approvers)
            if rule.required_approvals > listed:
                self.fail(
                    f"{prefix}.required_approvals",
                    f"{rule.required_approvals} approvals required but only {listed} "
                    "approver(s) listed and no group: it could never be approved",
                )
        written = "allow_always" in table or "required_approvals" in table
        if rule.allow_always and rule.required_approvals > 1 and written:
            self.fail(
                f"{prefix}.allow_always",
                f"a decision for the rest of the run is one person's decision, but this "
                f"tool needs {rule.required_approvals} approvals; allow it only where "
                "required_approvals = 1",
            )

    def ids(self, value: object, key: str, *, groups: bool) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.fail(key, "must be a list of Slack ids (strings)")
            return []
        good: list[str] = []
        for item in value:
            if not (SLACK_USER_ID.fullmatch(item) or (groups and SLACK_GROUP_ID.fullmatch(item))):
                kinds = "user ids (U…, W…) or user group ids (S…)" if groups else "user ids"
                self.fail(key, f"{item!r} is not a Slack id; use {kinds}")
            elif item in good:
                self.fail(key, f"lists {item} twice")
            else:
                good.append(item)
        return good

    def any_ids(self, value: object, key: str) -> list[str]:
        return self.ids(value, key, groups=True)

    def table(self, value: object, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(key, "must be a table")
            return {}
        return value

    def unknown(self, table: Mapping[str, Any], known: frozenset[str], prefix: str) -> None:
        for key in table:
            if key not in known:
                where = f"{prefix}.{key}" if prefix else key
                self.fail(where, f"unknown key (known: {', '.join(sorted(known))})")
