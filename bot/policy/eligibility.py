"""Who may decide a call: a person's eligibility under a tool's rule, and the
directories that answer group and channel membership (Slack's in bot.slack)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from bot.policy.rules import SLACK_GROUP_ID, ToolRule


class GroupDirectory(Protocol):
    async def members(self, group_id: str) -> frozenset[str]:
        """The user ids in a user group (S…); an unknown group has no members.
        Implementations may cache briefly; failures raise an ApprovalsError."""
        ...


class NoGroups:
    """A directory without groups: every group is empty (no Slack, or no groups used)."""

    async def members(self, group_id: str) -> frozenset[str]:
        return frozenset()


class StaticGroups:
    """Groups whose members are given (a file at the terminal, where Slack is not asked);
    a group not given has no members."""

    def __init__(self, groups: Mapping[str, Iterable[str]] | None = None) -> None:
        self._groups = {group: frozenset(users) for group, users in (groups or {}).items()}

    async def members(self, group_id: str) -> frozenset[str]:
        return self._groups.get(group_id, frozenset())

    def knows(self, group_id: str) -> bool:
        """Whether the group's members were given (an unknown group may have members)."""
        return group_id in self._groups

    def has_member(self, group_id: str, user: str) -> bool:
        return user in self._groups.get(group_id, frozenset())


class ChannelDirectory(Protocol):
    async def is_member(self, channel_id: str, user: str) -> bool:
        """Is `user` a member of the conversation? Implementations may cache briefly;
        when they cannot tell (Slack failed), the answer is no (fail closed)."""
        ...


@dataclass(frozen=True, kw_only=True)
class Eligible:
    via: str  # "anyone", "listed", the group id, an escalation step, a stand-in's absence
    stands_in_for: str | None = None  # eligible only as this person's stand-in
    kind: Literal["eligible"] = "eligible"


@dataclass(frozen=True, kw_only=True)
class NotEligible:
    reason: str  # one line for people: why this person may not decide
    code: Literal["self_approval", "not_an_approver", "not_a_channel_member"]
    kind: Literal["not_eligible"] = "not_eligible"


Eligibility = Eligible | NotEligible


async def in_any(ids: tuple[str, ...], user: str, groups: GroupDirectory) -> str | None:
    """The first of `ids` (user ids and group ids) that names `user`, or None."""
    if user in ids:
        return user
    for group in ids:
        if SLACK_GROUP_ID.fullmatch(group) and user in await groups.members(group):
            return group
    return None


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
