"""A fake Slack Web API on 127.0.0.1 port 0 that the real slack_sdk client talks to.

It records every call, answers the methods the bot uses with Slack-shaped JSON, and can
be told to answer 429 (with Retry-After) or a method-specific error a number of times.
It refuses what Slack refuses: blocks and views past Block Kit's limits; an ephemeral
message to someone who is not a member of the channel (`user_not_in_channel`); a
message to a direct-message channel nobody opened (`channel_not_found`); opening a DM
with a deactivated person or the bot itself; and, once told a method's rate
(`rate_limit`), calls past it, with 429 and the Retry-After of the window's end.
Tests wait on recorded calls with `wait_for` (a condition with a deadline), never sleeps.

It shares one thing with the product's stand-in for Slack (bot.devconsole): the Block
Kit limit checks, which only make it stricter. Its answers stay its own: a recorder that
tests program (failures, group members, channel members), and an oracle independent of
the stand-in's model of Slack, which the tests would otherwise take on trust.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from bot.devconsole import limits

BOT_USER_ID = "UBOT0001"
BOT_ID = "BBOT0001"
TEAM_ID = "T0000001"
APP_ID = "A0000001"
RESPONSE_URL = "response_url"  # the `method` recorded for posts to a response_url


@dataclass(frozen=True, kw_only=True)
class Call:
    method: str
    args: Mapping[str, Any]
    token: str | None
    answer: Mapping[str, Any]  # what the fake answered (e.g. the posted message's ts)

    @property
    def ok(self) -> bool:
        return bool(self.answer.get("ok"))

    @property
    def text(self) -> str:
        """Everything readable in the call: `text` and the blocks' texts, for asserts."""
        return (
            str(self.args.get("text", ""))
            + "\n"
            + json.dumps(self.args.get("blocks") or [], ensure_ascii=False)
        )


BeforeAnswer = Callable[[str, Mapping[str, Any], str | None], Awaitable[None]]
"""(method, arguments, token): what a fault campaign does to the caller before Slack
answers it (kill it: the call was made, its answer never arrives)."""


@dataclass(kw_only=True)
class _Failure:
    times: int
    status: int
    error: str | None
    retry_after: int | None
    after: int = 0  # calls answered normally before the failures start


@dataclass(kw_only=True)
class _Rate:
    calls: int
    per_seconds: float
    seen: list[float] = field(default_factory=list)

    def retry_after(self) -> int | None:
        """Seconds to wait (None: the call may go through now, and is counted)."""
        now = time.monotonic()
        self.seen = [at for at in self.seen if now - at < self.per_seconds]
        if len(self.seen) < self.calls:
            self.seen.append(now)
            return None
        return max(1, math.ceil(self.seen[0] + self.per_seconds - now))


@dataclass(kw_only=True)
class FakeSlack:
    """Start with `await fake.start()`; `fake.api_url` is the base URL for slack_sdk."""

    calls: list[Call] = field(default_factory=list)
    usergroups: dict[str, list[str]] = field(default_factory=dict)
    channel_members: dict[str, list[str]] = field(default_factory=dict)
    view_hashes: dict[str, str] = field(default_factory=dict)  # open modals: id -> hash
    ims: dict[str, str] = field(default_factory=dict)  # DM channels opened: id -> the person
    disabled_users: set[str] = field(default_factory=set)  # deactivated: no DM opens
    _failures: dict[str, list[_Failure]] = field(default_factory=dict)
    _outages: dict[str, _Failure] = field(default_factory=dict)
    _rates: dict[str, _Rate] = field(default_factory=dict)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _runner: web.AppRunner | None = None
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    api_url: str = ""
    granted_scopes: list[str] | None = None  # the X-OAuth-Scopes Slack answers with, if any
    socket_url: str = ""  # what apps.connections.open answers (Socket Mode's WebSocket)
    before_answer: BeforeAnswer | None = None  # called with each call before it is answered

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        app.router.add_get("/api/{method}", self._handle)  # slack_sdk GETs some reads
        app.router.add_post("/hooks/{path:.*}", self._handle_response_url)
        app.router.add_get("/socket", self._handle_socket)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.api_url = f"http://127.0.0.1:{port}/api/"
        self.socket_url = f"ws://127.0.0.1:{port}/socket"
        return self.api_url

    async def _handle_socket(self, request: web.Request) -> web.WebSocketResponse:
        """A Socket Mode connection that delivers nothing (pings are answered)."""
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        async for _ in socket:
            pass
        return socket

    async def close(self) -> None:
        for socket in self._sockets:
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- programming failures ---------------------------------------------------------

    def fail(
        self,
        method: str,
        *,
        times: int = 1,
        status: int = 200,
        error: str | None = None,
        retry_after: int | None = None,
        after: int = 0,
    ) -> None:
        """Answer the next `times` calls of `method` (after `after` normal ones) with an
        error: `status=429` and `retry_after` for rate limits, or `error` (e.g.
        "expired_trigger_id")."""
        self._failures.setdefault(method, []).append(
            _Failure(times=times, status=status, error=error, retry_after=retry_after, after=after)
        )

    def go_down(
        self, method: str, *, status: int, error: str | None = None, retry_after: int | None = None
    ) -> None:
        """Answer every call of `method` with this failure until `come_back` (an outage of
        a length in time rather than in calls)."""
        self._outages[method] = _Failure(
            times=0, status=status, error=error, retry_after=retry_after
        )

    def come_back(self, method: str) -> None:
        self._outages.pop(method, None)

    def rate_limit(self, method: str, *, calls: int, per_seconds: float) -> None:
        """From now on, answer `method` past `calls` calls in any `per_seconds` with 429
        and the Retry-After of when the window frees (as Slack's tiers do)."""
        self._rates[method] = _Rate(calls=calls, per_seconds=per_seconds)

    def dm_channel(self, user: str) -> str:
        """The id conversations.open gives the bot's DM with `user`."""
        return "D" + user[1:]

    # -- inspecting calls -------------------------------------------------------------

    def calls_to(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    async def wait_for(
        self,
        method: str,
        predicate: Callable[[Call], bool] = lambda call: True,
        *,
        count: int = 1,
        within: float = 10.0,
    ) -> list[Call]:
        """Wait until `count` calls of `method` match `predicate`; return them."""

        def matching() -> list[Call]:
            return [call for call in self.calls_to(method) if predicate(call)]

        async with self._changed:
            try:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: len(matching()) >= count), within
                )
            except TimeoutError:
                seen = [(c.method, dict(c.args)) for c in self.calls]
                raise AssertionError(
                    f"timed out waiting for {count} x {method}; calls so far: {seen}"
                ) from None
            return matching()

    # -- the API ----------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await _arguments(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or None
        if self.before_answer is not None:
            await self.before_answer(method, args, token)
        failure = self._outages.get(method) or self._next_failure(method)
        headers: dict[str, str] = {}
        status = 200
        rate = self._rates.get(method)
        wait = rate.retry_after() if rate is not None and failure is None else None
        if wait is not None:
            status, headers["Retry-After"] = 429, str(wait)
            answer: dict[str, Any] = {"ok": False, "error": "ratelimited"}
        elif failure is not None:
            if failure.retry_after is not None:
                headers["Retry-After"] = str(failure.retry_after)
            status = failure.status
            answer = {"ok": False, "error": failure.error or "ratelimited"}
        elif problems := _block_kit_problems(method, args):
            answer = {
                "ok": False,
                "error": problems[0],
                "response_metadata": {"messages": problems[1:]},
            }
        elif (handler := _HANDLERS.get(method)) is not None:
            answer = handler(self, args)
        else:
            answer = {"ok": False, "error": "unknown_method"}
        if self.granted_scopes is not None:
            headers["X-OAuth-Scopes"] = ",".join(self.granted_scopes)
        async with self._changed:
            self.calls.append(Call(method=method, args=args, token=token, answer=answer))
            self._changed.notify_all()
        return web.json_response(answer, status=status, headers=headers)

    async def _handle_response_url(self, request: web.Request) -> web.Response:
        """A slash command's response_url (Slack answers plain `ok`)."""
        args = dict(json.loads(await request.text() or "{}"))
        args["path"] = request.match_info["path"]
        async with self._changed:
            self.calls.append(Call(method=RESPONSE_URL, args=args, token=None, answer={"ok": True}))
            self._changed.notify_all()
        return web.Response(text="ok")

    @property
    def response_url(self) -> str:
        """A response_url for slash commands that lands here (method RESPONSE_URL)."""
        return self.api_url.replace("/api/", "/hooks/commands/T0000001/1/x")

    def _next_failure(self, method: str) -> _Failure | None:
        queue = self._failures.get(method)
        if not queue:
            return None
        failure = queue[0]
        if failure.after > 0:
            failure.after -= 1
            return None
        failure.times -= 1
        if failure.times <= 0:
            queue.pop(0)
        return failure

    def next_ts(self) -> str:
        return f"1700000000.{next(self._ts):06d}"


async def _arguments(request: web.Request) -> dict[str, Any]:
    if request.method == "GET":
        return dict(request.query)
    raw = await request.text()
    query = dict(request.query)  # slack_sdk sends some methods' arguments there (Slack reads both)
    if request.content_type == "application/json":
        data = json.loads(raw) if raw else {}
        return {**query, **dict(data)}
    args: dict[str, Any] = {**query, **dict(parse_qsl(raw, keep_blank_values=True))}
    for key in ("blocks", "view", "attachments"):
        if isinstance(args.get(key), str):
            args[key] = json.loads(args[key])
    return args


def _block_kit_problems(method: str, args: Mapping[str, Any]) -> list[str]:
    """Slack's error code and messages for blocks or a view past Block Kit's limits."""
    if method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
        problems = limits.message_problems(args.get("blocks"))
        return ["invalid_blocks", *problems] if problems else []
    if method in ("views.open", "views.update", "views.push", "views.publish"):
        problems = limits.view_problems(args.get("view"), home=method == "views.publish")
        return ["invalid_arguments", *problems] if problems else []
    return []


def _auth_test(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "ok": True,
        "url": "https://fake.slack.test/",
        "team": "Fake",
        "user": "approvals",
        "team_id": TEAM_ID,
        "user_id": BOT_USER_ID,
        "bot_id": BOT_ID,
        "app_id": APP_ID,
        "is_enterprise_install": False,
    }


def _post_message(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    channel = str(args.get("channel"))
    if channel.startswith("D") and channel not in fake.ims:
        return {"ok": False, "error": "channel_not_found"}  # a DM the bot never opened
    ts = fake.next_ts()
    message = {"type": "message", "ts": ts, "text": args.get("text", ""), "user": BOT_USER_ID}
    if args.get("thread_ts"):
        message["thread_ts"] = args["thread_ts"]
    return {"ok": True, "channel": args.get("channel"), "ts": ts, "message": message}


def _update(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "ok": True,
        "channel": args.get("channel"),
        "ts": args.get("ts"),
        "text": args.get("text"),
    }


def _post_ephemeral(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    """Only a member of the conversation is shown an ephemeral message there."""
    channel, user = str(args.get("channel")), str(args.get("user"))
    if channel in fake.ims:
        members = [fake.ims[channel]]
    elif channel in fake.channel_members:
        members = fake.channel_members[channel]
    else:
        return {"ok": False, "error": "channel_not_found"}
    if user not in members:
        return {"ok": False, "error": "user_not_in_channel"}
    return {"ok": True, "message_ts": fake.next_ts()}


def _conversations_open(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    """A 1:1 DM with one person (the bot's own DM with them; the same id every time)."""
    users = [user for user in str(args.get("users") or "").split(",") if user]
    if len(users) != 1:
        return {"ok": False, "error": "not_enough_users" if not users else "too_many_users"}
    [user] = users
    if user == BOT_USER_ID:
        return {"ok": False, "error": "cannot_dm_bot"}
    if user in fake.disabled_users:
        return {"ok": False, "error": "user_disabled"}
    if not user.startswith(("U", "W")):
        return {"ok": False, "error": "user_not_found"}
    channel = fake.dm_channel(user)
    fake.ims[channel] = user
    return {"ok": True, "channel": {"id": channel}}


def _views_open(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    view_id = f"V{fake.next_ts().replace('.', '')}"
    fake.view_hashes[view_id] = view_hash = f"h{fake.next_ts()}"
    return {
        "ok": True,
        "view": {"id": view_id, "hash": view_hash, **dict(args.get("view") or {})},
    }


def _views_update(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    """Replace an open modal; a stale `hash` is a hash_conflict, as in Slack."""
    view_id = str(args.get("view_id"))
    if view_id not in fake.view_hashes:
        return {"ok": False, "error": "not_found"}
    if args.get("hash") and args["hash"] != fake.view_hashes[view_id]:
        return {"ok": False, "error": "hash_conflict"}
    fake.view_hashes[view_id] = view_hash = f"h{fake.next_ts()}"
    return {
        "ok": True,
        "view": {"id": view_id, "hash": view_hash, **dict(args.get("view") or {})},
    }


def _views_publish(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"ok": True, "view": dict(args.get("view") or {})}


def _conversations_info(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    channel = str(args.get("channel"))
    return {"ok": True, "channel": {"id": channel, "name": f"chan-{channel.lower()}"}}


def _users_info(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    user = str(args.get("user"))
    return {"ok": True, "user": {"id": user, "name": user.lower(), "tz": "UTC", "is_bot": False}}


def _usergroups_users_list(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    group = str(args.get("usergroup"))
    if group not in fake.usergroups:
        return {"ok": False, "error": "no_such_subteam"}
    return {"ok": True, "users": fake.usergroups[group]}


def _conversations_members(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    """One page of a conversation's members; the cursor is the offset of the next page."""
    channel = str(args.get("channel"))
    if channel not in fake.channel_members:
        return {"ok": False, "error": "channel_not_found"}
    members = fake.channel_members[channel]
    start = int(args.get("cursor") or 0)
    limit = int(args.get("limit") or 100)
    end = start + limit
    return {
        "ok": True,
        "members": members[start:end],
        "response_metadata": {"next_cursor": str(end) if end < len(members) else ""},
    }


def _connections_open(fake: FakeSlack, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"ok": True, "url": fake.socket_url}


_HANDLERS: dict[str, Callable[[FakeSlack, Mapping[str, Any]], dict[str, Any]]] = {
    "apps.connections.open": _connections_open,
    "auth.test": _auth_test,
    "chat.postMessage": _post_message,
    "chat.update": _update,
    "chat.postEphemeral": _post_ephemeral,
    "views.open": _views_open,
    "views.update": _views_update,
    "views.publish": _views_publish,
    "conversations.info": _conversations_info,
    "users.info": _users_info,
    "usergroups.users.list": _usergroups_users_list,
    "conversations.members": _conversations_members,
    "conversations.open": _conversations_open,
}
