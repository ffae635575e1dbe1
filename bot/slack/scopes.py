"""The bot scopes the code needs: for each Slack Web API method it calls and each event
it subscribes to, the scopes Slack asks of it. manifest.yml requests exactly these
(tests/slack/test_manifest.py checks both ways), and `approvals-bot doctor` compares
them with the manifest and with what the token was granted."""

from __future__ import annotations

from collections.abc import Mapping

SLASH_COMMANDS = "commands"  # the scope of /agent and /approvals

METHOD_SCOPES: Mapping[str, tuple[str, ...]] = {
    "auth.test": (),
    "chat.postMessage": ("chat:write",),
    "chat.update": ("chat:write",),
    "chat.postEphemeral": ("chat:write",),
    "views.open": (),
    "views.update": (),
    "views.publish": (),
    "usergroups.users.list": ("usergroups:read",),
    # who may see and decide a channel's calls: public and private channels and group
    # DMs (a DM with the bot is scoped by the policy alone, so no im:read)
    "conversations.members": ("channels:read", "groups:read", "mpim:read"),
    # a card's copy, or a requester's outcome, in someone's direct messages
    "conversations.open": ("im:write",),
}
"""Every Web API method the bot calls with its bot token (apps.connections.open, Socket
Mode's, takes the app-level token and its connections:write instead)."""

EVENT_SCOPES: Mapping[str, tuple[str, ...]] = {
    "app_home_opened": (),
    "message.channels": ("channels:history",),
    "message.groups": ("groups:history",),
}
"""The bot events manifest.yml subscribes to (thread replies, App Home)."""


def required_bot_scopes() -> frozenset[str]:
    """Every bot scope the code needs: no more (the manifest asks for the fewest)."""
    needed = {SLASH_COMMANDS}
    for scopes in (*METHOD_SCOPES.values(), *EVENT_SCOPES.values()):
        needed.update(scopes)
    return frozenset(needed)
