"""The policy's rules: one `ToolRule` per tool over the defaults, the admins, and the
`Limits` of one request (the file they are read from: bot.policy.loading)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import cached_property
from typing import Any

from bot.errors import ConfigFileError
from bot.policy.routing import Routing
from bot.policy.windows import Mode

BUILTIN = "<built-in defaults>"
# Slack ids, matched whole (`fullmatch`): users are U… (W… on Enterprise Grid), user
# groups S…. Real ids are about 9 to 11 characters; the bound keeps a long text from
# passing as one.
SLACK_USER_ID = re.compile(r"[UW][A-Z0-9]{2,30}")
SLACK_GROUP_ID = re.compile(r"S[A-Z0-9]{2,30}")


@dataclass(frozen=True, kw_only=True)
class ToolRule:
    """The effective rule for one tool (the defaults with the tool's overrides)."""

    approvers: tuple[str, ...] = ()  # user ids and group ids; empty: anyone (but see self)
    required_approvals: int = 1
    allow_self_approval: bool = False
    require_reason: bool = True
    expires_after: timedelta | None = timedelta(hours=24)  # None: never (not from TOML)
    remind_before: timedelta = timedelta(hours=1)  # zero: no reminder
    allow_always: bool = False  # may one decision stand for the rest of the run?
    allow_window: timedelta | None = None  # may one approval cover matching calls this long?
    window_match: tuple[str, ...] = ()  # argument fields a window's calls must share
    mode: Mode = "approve"  # "audit": the call runs without waiting, recorded after
    # -- how the call reaches people (bot.policy.routing) --
    routing: Routing = field(default_factory=Routing)

    @property
    def user_approvers(self) -> frozenset[str]:
        return frozenset(a for a in self.approvers if not SLACK_GROUP_ID.fullmatch(a))

    @property
    def group_approvers(self) -> tuple[str, ...]:
        return tuple(a for a in self.approvers if SLACK_GROUP_ID.fullmatch(a))

    @property
    def anyone(self) -> bool:
        return not self.approvers

    def escalation_ids(self) -> frozenset[str]:
        """Every user and group id an escalation step of the rule names."""
        return frozenset(who for step in self.routing.escalation for who in step.to)

    @property
    def reminds(self) -> bool:
        """A reminder is sent only when it falls inside the approval's lifetime."""
        if self.expires_after is None:
            return False
        return timedelta(0) < self.remind_before < self.expires_after


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What one request may set in motion (bot.policy's doc says why these defaults)."""

    tool_calls_per_turn: int = 20
    pending_approvals_per_run: int = 20
    task_chars: int = 4000


@dataclass(frozen=True, kw_only=True)
class Policy:
    """The rules per tool, the admins, and whether people from outside the bot's own
    Slack workspace (Slack Connect partners in a shared channel) may act at all: by
    default they may not (bot.slack.workspace refuses their requests)."""

    defaults: ToolRule = field(default_factory=ToolRule)
    tools: Mapping[str, ToolRule] = field(default_factory=dict)
    admins: frozenset[str] = frozenset()
    allow_external_users: bool = False
    limits: Limits = field(default_factory=Limits)
    source: str = BUILTIN

    def rule_for(self, tool_name: str) -> ToolRule:
        return self.tools.get(tool_name, self.defaults)

    @cached_property
    def fingerprint(self) -> str:
        """What the policy decides, as 16 hex digits of a SHA-256 over its canonical
        JSON (every rule, admin, limit and duration; not the file's name): two policies
        with one fingerprint decide alike. Stored with each request, so that a decision
        taken under another policy is refused naming both (bot.service.authority)."""
        plain = json.dumps(_plain(replace(self, source="")), sort_keys=True,
                           separators=(",", ":"))  # fmt: skip
        return hashlib.sha256(plain.encode()).hexdigest()[:16]

    def is_admin(self, user: str) -> bool:
        return user in self.admins

    def check_tools(self, known: Iterable[str]) -> None:
        """Refuse a `[tools.<name>]` table for a tool no agent has: a misspelt name
        would silently leave that tool under the (looser) defaults."""
        names = set(known)
        problems = [
            f"tools.{name}: {no_such_tool(name, names)}"
            for name in sorted(self.tools)
            if name not in names
        ]
        if problems:
            raise PolicyError(self.source, problems)

    def with_default_expiry(self, expires_after: timedelta | None) -> Policy:
        """The policy with another default lifetime (None: approvals never expire), as the
        older `APPROVALS_APPROVAL_TTL_SECONDS` setting gives it; tool rules keep theirs."""
        return replace(self, defaults=replace(self.defaults, expires_after=expires_after))


DEFAULT_POLICY = Policy()


def _plain(value: Any) -> Any:
    """`value` as plain JSON data, in a canonical order (the fingerprint's input)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, frozenset | set):
        return sorted(_plain(item) for item in value)
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def no_such_tool(name: str, known: Iterable[str]) -> str:
    return f"no agent has a tool named {name!r} (tools: {', '.join(sorted(known)) or 'none'})"


class PolicyError(ConfigFileError):
    """A policy file with problems: all of them, each naming its key (`problems`). One
    problem reads "policy file <path>: <key>: <problem>"; several, one per line."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__("policy file", source, problems)
