"""The page people use: a plain HTML/CSS/JS app (bot/devconsole/static, no build step,
nothing from a CDN) and the small JSON API it calls: `GET /console/state` (what one
person sees, long-polled) and `POST /console/act` (what they do).

Only the page may drive it. The console listens on 127.0.0.1 only, and every request
must name that address in its Host header, so a web page that rebinds its own domain to
127.0.0.1 (DNS rebinding) is refused. The JSON API also wants the token the page was
served with, in a header a cross-origin page cannot send without a CORS preflight the
console never grants, a same-origin `Origin` on every POST, and a JSON body (no HTML
form can post one). The page may not be framed (no clickjacking of an Approve button).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from bot.devconsole.delivery import Delivery
from bot.devconsole.state import SlackState
from bot.devconsole.workspace import (
    BOT_NAME,
    BOT_USER_ID,
    CHANNEL_ID,
    CHANNEL_NAME,
    TEAM_NAME,
    Person,
    Workspace,
)
from bot.errors import InputError

STATIC = Path(__file__).parent / "static"
TOKEN_HEADER = "X-Console-Token"
LONG_POLL_SECONDS = 20.0
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_STATIC_TYPES = {".js": "text/javascript", ".css": "text/css"}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def host_guard(hosts: Callable[[], Iterable[str]]) -> Middleware:
    """A middleware refusing any request whose Host is not one of `hosts()` (the
    console's own 127.0.0.1:PORT and localhost:PORT): the DNS-rebinding defence, for the
    page and the Web API alike."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.host not in hosts():
            return web.Response(
                status=421, text=f"this console answers only at {' or '.join(hosts())}\n"
            )
        response = await handler(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    return guard


class Page:
    def __init__(
        self, *, state: SlackState, workspace: Workspace, delivery: Delivery, token: str
    ) -> None:
        self.state = state
        self.workspace = workspace
        self.delivery = delivery
        self._token = token
        self.origins: tuple[str, ...] = ()  # http://HOST:PORT the page is served from

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/", self.index),
            web.get("/static/{name}", self.static),
            web.get("/console/state", self.snapshot),
            web.post("/console/act", self.act),
        ]

    async def index(self, request: web.Request) -> web.Response:
        html = (STATIC / "index.html").read_text(encoding="utf-8")
        return web.Response(
            text=html.replace("{{TOKEN}}", self._token), content_type="text/html", charset="utf-8"
        )

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        path = STATIC / name
        kind = _STATIC_TYPES.get(path.suffix)
        if kind is None or path.parent != STATIC or not path.is_file():
            raise web.HTTPNotFound()
        return web.Response(text=path.read_text(encoding="utf-8"), content_type=kind)

    async def snapshot(self, request: web.Request) -> web.Response:
        self._check(request)
        asked = request.query.get("as")
        person = self.workspace.person(asked or "") or self.workspace.people[0]
        since = request.query.get("since", "")
        if since.isdigit():
            await self.state.wait_for_change(int(since), within=LONG_POLL_SECONDS)
        return web.json_response(self.seen_by(person))

    async def act(self, request: web.Request) -> web.Response:
        self._check(request)
        if request.content_type != "application/json":
            raise web.HTTPUnsupportedMediaType(text="the console takes JSON only\n")
        try:
            action = _json_object(await request.text())
            await self._do(self._person(action.get("as")), action)
        except InputError as error:
            return web.json_response({"ok": False, "error": str(error)}, status=400)
        return web.json_response({"ok": True})

    async def _do(self, person: Person, action: Mapping[str, Any]) -> None:
        kind = action.get("do")
        values = action.get("values")
        typed: Mapping[str, Any] = values if isinstance(values, dict) else {}
        if kind == "send":
            text = _text(action, "text").strip()
            if not text:
                raise InputError("nothing to send")
            await self.delivery.send(person, text, thread_ts=_optional(action, "thread_ts"))
        elif kind == "click":
            await self.delivery.click(
                person,
                block_id=_text(action, "block_id"),
                action_id=_text(action, "action_id"),
                message_ts=_optional(action, "message_ts"),
                view_id=_optional(action, "view_id"),
                typed=typed,
            )
        elif kind == "submit":
            await self.delivery.submit(person, view_id=_text(action, "view_id"), typed=typed)
        elif kind == "close":
            await self.delivery.close(person, view_id=_text(action, "view_id"))
        elif kind == "home":
            await self.delivery.open_home(person)
        else:
            raise InputError(f"unknown action {kind!r}")

    def seen_by(self, person: Person) -> dict[str, Any]:
        """What `person` sees: the channel (with their own ephemeral messages), their
        direct messages with the bot, their top modal, their App Home, and the log of
        the bot's Web API calls."""
        stack = self.state.stacks.get(person.id) or []
        home = self.state.homes.get(person.id)
        return {
            "version": self.state.version,
            "ready": self.delivery.events_url is not None,
            "me": person.id,
            "team": TEAM_NAME,
            "channel": {"id": CHANNEL_ID, "name": CHANNEL_NAME},
            "bot": {"id": BOT_USER_ID, "name": BOT_NAME},
            "people": [
                {"id": p.id, "name": p.name, "role": p.role, "in_channel": p.in_channel}
                for p in self.workspace.people
            ],
            "names": self.workspace.names(),
            "messages": [
                m.as_json()
                for m in self.state.messages
                if m.channel == CHANNEL_ID and self.state.visible_to(m, person.id)
            ],
            "dm": self._direct_messages(person),
            "modal": stack[-1].as_json() if stack else None,
            "depth": len(stack),
            "home": home.as_json() if home else None,
            "log": [call.as_json() for call in self.state.log],
        }

    def _direct_messages(self, person: Person) -> dict[str, Any]:
        """`person`'s direct messages with the bot (none until the bot opened the DM)."""
        channel = SlackState.im_id(person.id)
        opened = channel in self.state.ims
        return {
            "id": channel if opened else None,
            "messages": [
                m.as_json()
                for m in self.state.messages
                if opened and m.channel == channel and self.state.visible_to(m, person.id)
            ],
        }

    def _check(self, request: web.Request) -> None:
        """The console's own page, and nothing else, may call its API."""
        token = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(token.encode(), self._token.encode()):
            raise web.HTTPForbidden(text=f"missing or wrong {TOKEN_HEADER}\n")
        origin = request.headers.get("Origin")
        if (request.method != "GET" or origin is not None) and origin not in self.origins:
            raise web.HTTPForbidden(text="cross-origin requests are refused\n")

    def _person(self, user_id: Any) -> Person:
        person = self.workspace.person(user_id) if isinstance(user_id, str) else None
        if person is None:
            raise InputError(f"no such person: {user_id!r}")
        return person


def _json_object(text: str) -> dict[str, Any]:
    try:
        action = json.loads(text)
    except ValueError:
        raise InputError("an action is a JSON object; this is not JSON") from None
    if not isinstance(action, dict):
        raise InputError("an action is a JSON object")
    return action


def _text(action: Mapping[str, Any], key: str) -> str:
    value = action.get(key)
    if not isinstance(value, str):
        raise InputError(f"{key} must be a string")
    return value


def _optional(action: Mapping[str, Any], key: str) -> str | None:
    return _text(action, key) if action.get(key) is not None else None
