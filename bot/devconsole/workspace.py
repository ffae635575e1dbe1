"""Who is in the stand-in workspace: its team, app and bot user, the one channel, the
people a developer may act as, and the user groups Slack would resolve.

Pure data. The dev command fits the people to the policy the bot runs with
(bot.commands.dev), so "an approver" in the picker is one the policy names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from bot.errors import ConfigError

Role = Literal["requester", "approver", "admin", "outsider"]

TEAM_ID = "T0DEVCONSOLE"
TEAM_NAME = "dev console"
APP_ID = "A0DEVCONSOLE"
BOT_USER_ID = "U0DEVBOT"
BOT_ID = "B0DEVBOT"
BOT_NAME = "approvals"
CHANNEL_ID = "C0DEVOPS"
CHANNEL_NAME = "ops"


@dataclass(frozen=True, kw_only=True)
class Person:
    """Someone the page lets you be. An outsider is not in the channel: they may read
    it and press its buttons (a public channel's preview), as in Slack."""

    id: str
    name: str
    role: Role

    @property
    def in_channel(self) -> bool:
        return self.role != "outsider"


REQUESTER = Person(id="U0RILEY", name="Riley", role="requester")
APPROVERS = (
    Person(id="U0ALICE", name="Alice", role="approver"),
    Person(id="U0BOB", name="Bob", role="approver"),
)
ADMIN = Person(id="U0SAM", name="Sam", role="admin")
OUTSIDER = Person(id="U0OLIVE", name="Olive", role="outsider")
DEFAULT_PEOPLE = (REQUESTER, *APPROVERS, ADMIN, OUTSIDER)


@dataclass(frozen=True, kw_only=True)
class Workspace:
    """The team, the channel #ops, the people and the user groups (group id -> members)."""

    people: tuple[Person, ...] = DEFAULT_PEOPLE
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ids = [person.id for person in self.people]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"two people of the dev console share an id: {ids}")

    def person(self, user_id: str) -> Person | None:
        return next((person for person in self.people if person.id == user_id), None)

    @property
    def channel_members(self) -> tuple[str, ...]:
        """Who conversations.members lists: the bot and everyone but the outsiders."""
        return (BOT_USER_ID, *(person.id for person in self.people if person.in_channel))

    def names(self) -> dict[str, str]:
        """User id -> display name, the bot included (for mentions on the page)."""
        return {BOT_USER_ID: BOT_NAME, **{person.id: person.name for person in self.people}}
