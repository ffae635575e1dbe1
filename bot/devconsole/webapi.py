"""The Slack Web API the bot's own slack_sdk client talks to, over HTTP (SLACK_API_URL).

It answers the methods the bot calls with Slack-shaped JSON and refuses what Slack
would refuse: a wrong token (`invalid_auth`), a trigger id used twice or after 3 s,
a stale view hash (`hash_conflict`), a fourth pushed view, an ephemeral message to
someone outside the channel (`user_not_in_channel`), an update of a message that is
not the bot's, blocks past Block Kit's limits (bot.devconsole.limits), an unknown
channel, user or user group. Direct messages are Slack's: `conversations.open` gives
the bot's DM with one person (never with the bot itself), and a DM takes messages only
once opened. Every call lands in the page's log, refusals in red.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from bot.devconsole import limits
from bot.devconsole.arguments import Refused, identified, web_api_arguments
from bot.devconsole.payloads import view_json
from bot.devconsole.state import MAX_VIEW_STACK, ApiCall, Message, SlackState, Trigger, View
from bot.devconsole.workspace import (
    APP_ID,
    BOT_ID,
    BOT_NAME,
    BOT_USER_ID,
    CHANNEL_ID,
    CHANNEL_NAME,
    TEAM_ID,
    TEAM_NAME,
    Workspace,
)

API_PATH = "/api/"
HOOKS_PATH = "/hooks/"
MEMBERS_PAGE = 100
Answer = dict[str, Any]


class WebApi:
    """The Web API of one stand-in workspace; `token` is the only bot token it accepts."""

    def __init__(self, *, state: SlackState, workspace: Workspace, token: str) -> None:
        self.state = state
        self.workspace = workspace
        self._token = token

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post(API_PATH + "{method}", self.handle),
            web.get(API_PATH + "{method}", self.handle),  # slack_sdk GETs some reads
            web.post(HOOKS_PATH + "{key}", self.handle_response_url),
        ]

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: dict[str, Any] = {}
        try:
            args = await web_api_arguments(request)
            self._check_token(request, args)
            handler = _HANDLERS.get(method)
            if handler is None:
                raise Refused("unknown_method")
            answer = handler(self, args)
        except Refused as refused:
            answer = {"ok": False, "error": refused.code}
            if refused.messages:
                answer["response_metadata"] = {"messages": refused.messages}
        self.state.record(
            ApiCall(method=method, error=answer.get("error"), about=self._about(method, args))
        )
        return web.json_response(answer)

    async def handle_response_url(self, request: web.Request) -> web.Response:
        """A slash command's response_url: the answer is shown to the person who ran it."""
        used = self.state.use_response_url(request.match_info["key"])
        try:
            body = json.loads(await request.text() or "{}")
        except ValueError:
            return web.Response(status=400, text="invalid_payload")
        if used is None or not isinstance(body, dict):
            return web.Response(status=404, text="used_url" if used is None else "invalid_payload")
        self.state.answer(body, channel=used.channel, to=used.user)
        self.state.record(ApiCall(method="response_url", error=None, about=used.command))
        return web.Response(text="ok")

    def _check_token(self, request: web.Request, args: Mapping[str, Any]) -> None:
        header = request.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ") if header.startswith("Bearer ") else None
        token = token or args.get("token")
        if not token:
            raise Refused("not_authed")
        if token != self._token:
            raise Refused("invalid_auth")

    def _about(self, method: str, args: Mapping[str, Any]) -> str:
        user = args.get("user") or args.get("user_id")
        if isinstance(user, str) and (person := self.workspace.person(user)) is not None:
            return f"for {person.name}"
        if args.get("channel") == CHANNEL_ID:
            return f"in #{CHANNEL_NAME}"
        dm_with = self.state.ims.get(str(args.get("channel")))
        if dm_with is not None and (person := self.workspace.person(dm_with)) is not None:
            return f"in the DM with {person.name}"
        users = args.get("users")
        if isinstance(users, str) and (person := self.workspace.person(users)) is not None:
            return f"with {person.name}"
        return ""

    # -- helpers the handlers share ------------------------------------------------------

    def channel(self, args: Mapping[str, Any]) -> str:
        """#ops, or a DM the bot opened (a DM's id before conversations.open is unknown,
        as in Slack)."""
        channel = args.get("channel")
        if channel != CHANNEL_ID and channel not in self.state.ims:
            raise Refused("channel_not_found")
        return str(channel)

    def members(self, channel: str) -> tuple[str, ...]:
        """Who is in `channel`: #ops's members, or the bot and the DM's person."""
        dm_with = self.state.ims.get(channel)
        return (BOT_USER_ID, dm_with) if dm_with else self.workspace.channel_members

    def user(self, value: Any) -> str:
        if not isinstance(value, str) or self.workspace.person(value) is None:
            raise Refused("user_not_found")
        return value

    def trigger(self, args: Mapping[str, Any]) -> Trigger:
        taken = self.state.take_trigger(str(args.get("trigger_id") or ""))
        if isinstance(taken, str):
            raise Refused(taken)
        return taken

    def view_answer(self, view: View) -> Answer:
        stack = self.state.stacks.get(view.user) or [view]
        return {"ok": True, "view": {**view_json(view), "root_view_id": stack[0].id}}


def _checked(problems: list[str], code: str) -> None:
    if problems:
        raise Refused(code, problems)


def _text_or_blocks(args: Mapping[str, Any]) -> tuple[str, list[Any]]:
    blocks = args.get("blocks") or []
    text = str(args.get("text") or "")
    if not text and not blocks:
        raise Refused("no_text")
    _checked(limits.message_problems(blocks), "invalid_blocks")
    return text, identified(blocks)


# -- the methods ---------------------------------------------------------------------------


def _auth_test(api: WebApi, args: Mapping[str, Any]) -> Answer:
    return {
        "ok": True,
        "url": "http://127.0.0.1/",
        "team": TEAM_NAME,
        "user": BOT_NAME,
        "team_id": TEAM_ID,
        "user_id": BOT_USER_ID,
        "bot_id": BOT_ID,
        "app_id": APP_ID,
        "is_enterprise_install": False,
    }


def _bot_message(api: WebApi, args: Mapping[str, Any], *, only_for: str | None = None) -> Message:
    """The bot's message as chat.postMessage and chat.postEphemeral take it."""
    channel = api.channel(args)
    text, blocks = _text_or_blocks(args)
    thread_ts = args.get("thread_ts") or None
    return api.state.post(
        channel=channel,
        user=BOT_USER_ID,
        text=text,
        blocks=blocks,
        thread_ts=str(thread_ts) if thread_ts else None,
        only_for=only_for,
    )


def _post_message(api: WebApi, args: Mapping[str, Any]) -> Answer:
    message = _bot_message(api, args)
    return {"ok": True, "channel": message.channel, "ts": message.ts, "message": message.as_json()}


def _update(api: WebApi, args: Mapping[str, Any]) -> Answer:
    channel = api.channel(args)
    message = api.state.find(channel, str(args.get("ts") or ""))
    if message is None:
        raise Refused("message_not_found")
    if message.user != BOT_USER_ID:
        raise Refused("cant_update_message")
    text, blocks = _text_or_blocks(args)
    message.text, message.blocks, message.edited = text, blocks, True
    api.state.changed()
    return {"ok": True, "channel": channel, "ts": message.ts, "text": text}


def _post_ephemeral(api: WebApi, args: Mapping[str, Any]) -> Answer:
    channel = api.channel(args)
    user = api.user(args.get("user"))
    if user not in api.members(channel):
        raise Refused("user_not_in_channel")
    return {"ok": True, "message_ts": _bot_message(api, args, only_for=user).ts}


def _views_open(api: WebApi, args: Mapping[str, Any]) -> Answer:
    trigger = api.trigger(args)
    definition = _view_definition(args, home=False)
    view = api.state.new_view(trigger.user, definition)
    api.state.stacks[trigger.user] = [view]
    api.state.changed()
    return api.view_answer(view)


def _views_push(api: WebApi, args: Mapping[str, Any]) -> Answer:
    trigger = api.trigger(args)
    definition = _view_definition(args, home=False)
    stack = api.state.stack(trigger.user)
    if len(stack) >= MAX_VIEW_STACK:
        raise Refused("push_limit_reached")
    view = api.state.new_view(trigger.user, definition)
    stack.append(view)
    api.state.changed()
    return api.view_answer(view)


def _views_update(api: WebApi, args: Mapping[str, Any]) -> Answer:
    view = api.state.find_view(str(args.get("view_id") or ""))
    if view is None or view.definition.get("type") != "modal":
        raise Refused("not_found")
    if args.get("hash") and args["hash"] != view.hash:
        raise Refused("hash_conflict")
    definition = _view_definition(args, home=False)
    updated = api.state.new_view(view.user, definition, view_id=view.id)
    stack = api.state.stack(view.user)
    stack[stack.index(view)] = updated
    api.state.changed()
    return api.view_answer(updated)


def _views_publish(api: WebApi, args: Mapping[str, Any]) -> Answer:
    user = api.user(args.get("user_id"))
    current = api.state.homes.get(user)
    if current is not None and args.get("hash") and args["hash"] != current.hash:
        raise Refused("hash_conflict")
    definition = _view_definition(args, home=True)
    view = api.state.new_view(user, definition, view_id=current.id if current else None)
    api.state.homes[user] = view
    api.state.changed()
    return api.view_answer(view)


def _view_definition(args: Mapping[str, Any], *, home: bool) -> dict[str, Any]:
    view = args.get("view")
    _checked(limits.view_problems(view, home=home), "invalid_arguments")
    assert isinstance(view, dict)  # view_problems refuses anything else
    return {**view, "blocks": identified(view.get("blocks"))}


def _conversations_members(api: WebApi, args: Mapping[str, Any]) -> Answer:
    members = api.members(api.channel(args))
    cursor, limit = str(args.get("cursor") or "0"), str(args.get("limit") or MEMBERS_PAGE)
    if not cursor.isdigit():
        raise Refused("invalid_cursor")
    if not limit.isdigit():
        raise Refused("invalid_limit")
    start = int(cursor)
    end = start + int(limit)
    return {
        "ok": True,
        "members": list(members[start:end]),
        "response_metadata": {"next_cursor": str(end) if end < len(members) else ""},
    }


def _conversations_info(api: WebApi, args: Mapping[str, Any]) -> Answer:
    channel = api.channel(args)
    dm_with = api.state.ims.get(channel)
    if dm_with is not None:
        return {"ok": True, "channel": {"id": channel, "is_im": True, "user": dm_with}}
    return {
        "ok": True,
        "channel": {"id": channel, "name": CHANNEL_NAME, "is_channel": True, "is_member": True},
    }


def _conversations_open(api: WebApi, args: Mapping[str, Any]) -> Answer:
    """The bot's DM with one person (`users`), or an open one named by `channel`. Several
    users would make a group DM, which the console does not model: it refuses them."""
    if args.get("channel"):
        channel = api.channel(args)
        if channel not in api.state.ims:
            raise Refused("channel_not_found")
        return {"ok": True, "no_op": True, "already_open": True, "channel": {"id": channel}}
    users = [user.strip() for user in str(args.get("users") or "").split(",") if user.strip()]
    if not users:
        raise Refused("users_list_not_supplied")
    if len(users) > 1:
        raise Refused("too_many_users")
    if users[0] == BOT_USER_ID:
        raise Refused("cannot_dm_bot")
    channel, was_open = api.state.open_im(api.user(users[0]))
    answer: Answer = {"ok": True, "channel": {"id": channel}}
    if was_open:
        answer.update(no_op=True, already_open=True)
    return answer


def _users_info(api: WebApi, args: Mapping[str, Any]) -> Answer:
    user = api.user(args.get("user"))
    person = api.workspace.person(user)
    assert person is not None  # api.user checked it
    return {
        "ok": True,
        "user": {"id": user, "name": person.name.lower(), "real_name": person.name, "tz": "UTC",
                 "is_bot": False, "team_id": TEAM_ID},
    }  # fmt: skip


def _usergroups_users_list(api: WebApi, args: Mapping[str, Any]) -> Answer:
    members = api.workspace.groups.get(str(args.get("usergroup")))
    if members is None:
        raise Refused("no_such_subteam")
    return {"ok": True, "users": list(members)}


_HANDLERS: dict[str, Callable[[WebApi, Mapping[str, Any]], Answer]] = {
    "auth.test": _auth_test,
    "chat.postMessage": _post_message,
    "chat.update": _update,
    "chat.postEphemeral": _post_ephemeral,
    "views.open": _views_open,
    "views.push": _views_push,
    "views.update": _views_update,
    "views.publish": _views_publish,
    "conversations.members": _conversations_members,
    "conversations.info": _conversations_info,
    "conversations.open": _conversations_open,
    "users.info": _users_info,
    "usergroups.users.list": _usergroups_users_list,
}
