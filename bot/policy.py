"""Who may approve what, how many must, and for how long: the approval policy.

`APPROVALS_POLICY` names a TOML file (read with the standard library's `tomllib`);
without one the built-in defaults apply. The file has a `[defaults]` table and one
`[tools.<name>]` table per tool that differs; a tool table overrides only the keys it
sets. Example:

    admins = ["U0SECURITY"]
    allow_external_users = false  # true: Slack Connect partners may act too

    [defaults]
    approvers = []              # Slack user ids (U…/W…) and user group ids (S…); empty = anyone
    required_approvals = 1
    allow_self_approval = false
    require_reason = true
    expires_after = "24h"
    remind_before = "1h"        # "0s": no reminder

    [tools.deploy_release]
    approvers = ["S0RELEASE"]
    required_approvals = 2
    expires_after = "2h"

    [tools.get_status]
    allow_always = true         # "approve this tool for the rest of the run" (default false)

    [limits]                    # what one request may set in motion (defaults shown)
    tool_calls_per_turn = 20    # calls in one model turn; more and none of them runs
    pending_approvals_per_run = 20   # cards a run may wait on at once
    task_chars = 4000           # a task (or a thread reply) in characters

The limits stop one request from flooding a channel: a single /agent command of
thousands of "and"-joined clauses once posted thousands of review cards. 20 calls per
turn is well above what a real operations task asks for in one step (a handful of
deploys or restarts) and posts at most 20 cards, which Slack's one-message-a-second
pace for a channel sends in about 20 s. 4000 characters is the length Slack advises for
a message's text, and the bot reposts the task as its thread's root message. Past a
limit a run fails with one clear line in its thread; a task that is too long is refused
before any run starts.

Everything is checked at start-up: an unknown key, a bad duration or an impossible rule
(fewer listed approvers than required approvals, with no group listed; `allow_always`
with `required_approvals` > 1, since a standing decision is one person's) is a
ConfigError naming the file, the key and the problem; every problem of the file is
reported at once (`PolicyError.problems`; `approvals-bot policy check FILE`). Parsing
is pure; group membership is asked of a `GroupDirectory` (Slack's
`usergroups.users.list` in bot/slack) only when a person's eligibility is checked, and
channel membership of a `ChannelDirectory` (Slack's `conversations.members`): a call is
decided only by members of the channel it was asked in (bot.service.authority applies it).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

from bot.errors import ConfigError

POLICY_ENV = "APPROVALS_POLICY"
BUILTIN = "<built-in defaults>"
# Slack ids, matched whole (`fullmatch`): users are U… (W… on Enterprise Grid), user
# groups S…. Real ids are about 9 to 11 characters; the bound keeps a long text from
# passing as one.
SLACK_USER_ID = re.compile(r"[UW][A-Z0-9]{2,30}")
SLACK_GROUP_ID = re.compile(r"S[A-Z0-9]{2,30}")
_DURATION = re.compile(r"(\d{1,9})\s*([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Expiry and reminder times are `now + duration`: a longer one would overflow a datetime
# when the first approval is requested, long after the policy was accepted.
_LONGEST_DURATION = timedelta(days=3650)
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

    @property
    def user_approvers(self) -> frozenset[str]:
        return frozenset(a for a in self.approvers if not SLACK_GROUP_ID.fullmatch(a))

    @property
    def group_approvers(self) -> tuple[str, ...]:
        return tuple(a for a in self.approvers if SLACK_GROUP_ID.fullmatch(a))

    @property
    def anyone(self) -> bool:
        return not self.approvers

    @property
    def reminds(self) -> bool:
        """A reminder is sent only when it falls inside the approval's lifetime."""
        if self.expires_after is None:
            return False
        return timedelta(0) < self.remind_before < self.expires_after


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What one request may set in motion (see the module doc for the defaults' why)."""

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

    def is_admin(self, user: str) -> bool:
        return user in self.admins

    def check_tools(self, known: Iterable[str]) -> None:
        """Refuse a `[tools.<name>]` table for a tool no agent has: a misspelt name
        would silently leave that tool under the (looser) defaults."""
        names = set(known)
        problems = [
            f"tools.{name}: {_no_such_tool(name, names)}"
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


def _no_such_tool(name: str, known: Iterable[str]) -> str:
    return f"no agent has a tool named {name!r} (tools: {', '.join(sorted(known)) or 'none'})"


class PolicyError(ConfigError):
    """A policy file with problems: all of them, each naming its key (`problems`). One
    problem reads "policy file <path>: <key>: <problem>"; several, one per line."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        if len(problems) == 1:
            text = f"policy file {source}: {problems[0]}"
        else:
            listed = "\n".join(f"  {problem}" for problem in problems)
            text = f"policy file {source}: {len(problems)} problems:\n{listed}"
        super().__init__(text)


# -- eligibility -----------------------------------------------------------------------


class GroupDirectory(Protocol):
    async def members(self, group_id: str) -> frozenset[str]:
        """The user ids in a user group (S…); an unknown group has no members.
        Implementations may cache briefly; failures raise an ApprovalsError."""
        ...


class NoGroups:
    """A directory without groups: every group is empty (no Slack, or no groups used)."""

    async def members(self, group_id: str) -> frozenset[str]:
        return frozenset()


class ChannelDirectory(Protocol):
    async def is_member(self, channel_id: str, user: str) -> bool:
        """Is `user` a member of the conversation? Implementations may cache briefly;
        when they cannot tell (Slack failed), the answer is no (fail closed)."""
        ...


@dataclass(frozen=True, kw_only=True)
class Eligible:
    via: str  # "anyone", "listed", or the group id that made the person eligible
    kind: Literal["eligible"] = "eligible"


@dataclass(frozen=True, kw_only=True)
class NotEligible:
    reason: str  # one line for people: why this person may not decide
    code: Literal["self_approval", "not_an_approver", "not_a_channel_member"]
    kind: Literal["not_eligible"] = "not_eligible"


Eligibility = Eligible | NotEligible


async def is_eligible(
    rule: ToolRule, user: str, *, requester: str | None, groups: GroupDirectory
) -> Eligibility:
    """May `user` decide a call under `rule` for a run `requester` started?"""
    if requester is not None and user == requester and not rule.allow_self_approval:
        return NotEligible(
            code="self_approval",
            reason="you requested this run, and this tool's policy needs someone else to decide",
        )
    if rule.anyone:
        return Eligible(via="anyone")
    if user in rule.user_approvers:
        return Eligible(via="listed")
    for group in rule.group_approvers:
        if user in await groups.members(group):
            return Eligible(via=group)
    return NotEligible(
        code="not_an_approver",
        reason="you are not an approver for this tool (approvers: "
        + ", ".join(rule.approvers)
        + ")",
    )


# -- loading ---------------------------------------------------------------------------


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


def format_duration(duration: timedelta) -> str:
    """A duration as the policy writes it: "2h", "90m", "1d", "0s"."""
    seconds = int(duration.total_seconds())
    for unit in ("d", "h", "m"):
        if seconds and seconds % _UNIT_SECONDS[unit] == 0:
            return f"{seconds // _UNIT_SECONDS[unit]}{unit}"
    return f"{seconds}s"


def parse_duration(
    text: object, *, allow_zero: bool = False, longest: timedelta | None = _LONGEST_DURATION
) -> timedelta:
    """ "30s", "90m", "2h", "1d" (a whole number of at most nine digits, then the unit)
    -> timedelta; ValueError (a message for people) else. Policy times are at most
    `longest` (ten years); an operator's look-back (`--since 7d`) passes None."""
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            f'{text!r} is not a duration; write a whole number and a unit: "30s", "90m", '
            '"2h" or "1d"'
        )
    duration = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    if not duration and not allow_zero:
        raise ValueError("must be longer than zero")
    if longest is not None and duration > longest:
        raise ValueError(f"{text!r} is too long; write at most {longest.days}d")
    return duration


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
                self.fail(prefix, _no_such_tool(name, self.known_tools))
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
        self.unknown(table, _RULE_KEYS, prefix)
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
        self.possible(rule, table, prefix)
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
