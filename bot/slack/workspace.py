"""The bot's own Slack workspace, pinned at start-up, and the requests from outside it.

A valid signature only says a request came from Slack for this app, not that the person
belongs to the workspace the bot serves: in a channel shared over Slack Connect, people
of another organisation press the same buttons and run the same commands, and a request
may name another workspace, organisation (Enterprise Grid) or app. At start-up
`auth.test` tells the bot its own team, organisation and app (`Workspace`); from then on
a request naming another one in any of these fields is refused (`find_foreign`):

    api_app_id                         always (a request for another app)
    team_id, team.id, user.team_id,    unless the policy says allow_external_users;
    event.team, event.user_team,       for an org-wide (Enterprise Grid) install the
    event.source_team                  organisation is pinned, not the workspace
    enterprise_id, enterprise.id       unless the policy says allow_external_users

With `allow_external_users = true` only the app is pinned: Slack Connect partners act
under the same rules as everyone else (the policy's approvers, and membership of the
call's channel, which the bot's own token reads). `auth.test` may not name the app (older
tokens): the app id is then not checked, and the start-up log says so.

The refusal itself is a Bolt middleware (`PinToWorkspace`) that answers before any
listener runs: a slash command gets an ephemeral line, a modal submission a notice in
the modal, a click an ephemeral message (after the answer), an event nothing. Each is
logged and audited (`refused`, why "external") after the answer, except the channel
chatter the bot would ignore anyway (a message that is no reply in a thread, an edit, a
bot's post): in a shared channel every message of a partner arrives as an event, and
auditing each would bury the refusals that matter.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.errors import ConfigError, InputError
from bot.slack.messages.replies import EXTERNAL_REFUSED_TEXT
from bot.slack.modals import check_approval_id, decode_modal_context, notice_modal

log = logging.getLogger(__name__)

APP_FIELD = ("api_app_id",)
TEAM_FIELDS = (
    ("team_id",),
    ("team", "id"),
    ("user", "team_id"),
    ("event", "team"),
    ("event", "user_team"),
    ("event", "source_team"),
)
ENTERPRISE_FIELDS = (("enterprise_id",), ("enterprise", "id"))


@dataclass(frozen=True, kw_only=True)
class Workspace:
    """Who the bot is, by auth.test: its team (None for an org-wide install), its
    organisation (Enterprise Grid; None outside one) and its app (None: not said)."""

    team_id: str | None
    enterprise_id: str | None
    app_id: str | None
    org_wide: bool


def workspace_from_auth_test(answer: Mapping[str, Any]) -> Workspace:
    """The workspace an `auth.test` answer describes; ConfigError when it names none."""
    org_wide = answer.get("is_enterprise_install") is True
    team_id = _text(answer.get("team_id"))
    enterprise_id = _text(answer.get("enterprise_id"))
    if org_wide and enterprise_id is None:
        raise ConfigError("Slack auth.test says this is an org-wide install but names no org")
    if not org_wide and team_id is None:
        raise ConfigError("Slack auth.test named no team for SLACK_BOT_TOKEN")
    return Workspace(
        team_id=None if org_wide else team_id,
        enterprise_id=enterprise_id,
        app_id=_text(answer.get("app_id")),
        org_wide=org_wide,
    )


@dataclass(frozen=True, kw_only=True)
class Foreign:
    """A request from outside the workspace: the first field that names another team,
    organisation or app, and who and what it was about (as far as the payload says)."""

    field: str  # "user.team_id"
    value: str
    kind: str  # "command", "block_actions", "view_submission", "event_callback", ...
    user: str | None
    channel: str | None
    approval_id: str | None
    chatter: bool = False  # an event the bot would ignore anyway: refused without a record


def find_foreign(
    body: Mapping[str, Any], workspace: Workspace, *, allow_external_users: bool
) -> Foreign | None:
    """The first field of `body` that names another team, organisation or app, or None."""
    expected: list[tuple[tuple[str, ...], str | None]] = [(APP_FIELD, workspace.app_id)]
    if not allow_external_users:
        if not workspace.org_wide:
            expected.extend((path, workspace.team_id) for path in TEAM_FIELDS)
        expected.extend((path, workspace.enterprise_id) for path in ENTERPRISE_FIELDS)
    for path, ours in expected:
        value = _text(_at(body, path))
        if value is None or value == ours:
            continue
        if path == APP_FIELD and ours is None:
            continue  # auth.test did not say which app we are
        return Foreign(
            field=".".join(path),
            value=value,
            kind="command" if "command" in body else str(body.get("type") or "unknown"),
            user=_first(body, ("user", "id"), ("user_id",), ("event", "user")),
            channel=_first(
                body,
                ("channel", "id"),
                ("channel_id",),
                ("container", "channel_id"),
                ("event", "channel"),
            ),
            approval_id=_approval_id(body),
            chatter=_is_chatter(body),
        )
    return None


def refusal_response(foreign: Foreign) -> BoltResponse:
    """Slack's answer to a refused request: said where the person will see it at once."""
    if foreign.kind == "command":
        body: dict[str, Any] = {"response_type": "ephemeral", "text": EXTERNAL_REFUSED_TEXT}
    elif foreign.kind == "view_submission":
        body = {"response_action": "update", "view": notice_modal(EXTERNAL_REFUSED_TEXT)}
    else:
        return BoltResponse(status=200, body="")
    return BoltResponse(
        status=200, body=json.dumps(body), headers={"content-type": "application/json"}
    )


OnRefused = Callable[[Foreign], None]
"""Called for each refused request, before Slack is answered; the slow part (audit, an
ephemeral message) must be deferred until after the answer."""


class PinToWorkspace(AsyncMiddleware):
    """Refuse every request from outside the bot's workspace before a listener runs."""

    def __init__(
        self, workspace: Workspace, *, allow_external_users: bool, on_refused: OnRefused
    ) -> None:
        self._workspace = workspace
        self._allow_external = allow_external_users
        self._on_refused = on_refused

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        foreign = find_foreign(req.body, self._workspace, allow_external_users=self._allow_external)
        if foreign is None:
            return await next()
        if foreign.chatter:
            log.debug("dropped an event from outside the workspace (%s)", foreign.field)
            return refusal_response(foreign)
        log.warning(
            "refused a %s from outside the workspace: %s is %s (user %s)",
            foreign.kind,
            foreign.field,
            foreign.value,
            foreign.user,
        )
        self._on_refused(foreign)
        return refusal_response(foreign)


def _at(body: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = body
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _first(body: Mapping[str, Any], *paths: tuple[str, ...]) -> str | None:
    for path in paths:
        value = _text(_at(body, path))
        if value is not None:
            return value
    return None


def _is_chatter(body: Mapping[str, Any]) -> bool:
    """An event no listener acts on: a message that is not a person's reply in a thread."""
    event = body.get("event")
    if body.get("type") != "event_callback" or not isinstance(event, Mapping):
        return False
    if event.get("type") != "message":
        return False
    thread_ts = event.get("thread_ts")
    reply = isinstance(thread_ts, str) and thread_ts != event.get("ts")
    return not reply or bool(event.get("subtype") or event.get("bot_id"))


def _approval_id(body: Mapping[str, Any]) -> str | None:
    """What a click's button or a modal's metadata names (an approval id, or an uncertain
    call's `run:key`), when it is well formed."""
    actions = body.get("actions")
    try:
        if isinstance(actions, list) and actions and isinstance(actions[0], Mapping):
            value = _text(actions[0].get("value"))
            return check_approval_id(value) if value is not None else None
        metadata = _text(_at(body, ("view", "private_metadata")))
        return decode_modal_context(metadata).approval_id if metadata is not None else None
    except InputError:
        return None
