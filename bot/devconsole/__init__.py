"""A stand-in for Slack on 127.0.0.1, for `approvals-bot dev`: a Slack Web API the bot's
own client talks to, and a page that shows the bot's messages, modals and App Home and
delivers what people do there to the bot as Slack would, signed, over HTTP.

It knows nothing of the bot but its HTTP surface: of the bot's code it imports only the
error tree (a leaf).
"""

from bot.devconsole.console import DevConsole, Secrets
from bot.devconsole.workspace import (
    ADMIN,
    APPROVERS,
    DEFAULT_PEOPLE,
    OUTSIDER,
    REQUESTER,
    Person,
    Role,
    Workspace,
)

__all__ = [
    "ADMIN",
    "APPROVERS",
    "DEFAULT_PEOPLE",
    "OUTSIDER",
    "REQUESTER",
    "DevConsole",
    "Person",
    "Role",
    "Secrets",
    "Workspace",
]
