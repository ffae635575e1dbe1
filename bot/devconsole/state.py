"""What the stand-in Slack remembers: the channel's messages and threads, the bot's
direct messages with each person (opened with conversations.open), what each person
alone sees (ephemeral messages, their open modals, their App Home), the trigger ids and
response URLs it handed out, and a short log of the bot's Web API calls.

Every change bumps `version` and wakes the pages waiting for one (`wait_for_change`):
the page long-polls, so a click shows its effects as soon as the bot has made them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.devconsole.workspace import BOT_USER_ID, CHANNEL_ID

TRIGGER_SECONDS = 3.0  # Slack: a trigger id opens a modal within 3 s, once
TRIGGER_KEPT = 60.0  # how long a trigger id is remembered (to say "expired", not "invalid")
RESPONSE_URL_USES = 5  # Slack: a response_url answers up to 5 times (within 30 min)
MAX_VIEW_STACK = 3  # Slack: views.push past three views is push_limit_reached
LOG_SIZE = 50
SLACKBOT = "USLACKBOT"  # Slack's own voice: what it tells a person when the app failed


@dataclass(kw_only=True)
class Message:
    """A message in the channel or a direct message (`channel` is then the person's DM
    with the bot); `only_for` makes it ephemeral (one person sees it)."""

    ts: str
    channel: str
    user: str
    text: str
    blocks: list[Any] = field(default_factory=list)
    thread_ts: str | None = None
    only_for: str | None = None
    edited: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "ts": self.ts,
            "user": self.user,
            "text": self.text,
            "blocks": self.blocks,
            "thread_ts": self.thread_ts,
            "ephemeral": self.only_for is not None,
            "edited": self.edited,
        }


@dataclass(kw_only=True)
class View:
    """A modal in a person's stack, or their App Home (`definition["type"] == "home"`)."""

    id: str
    hash: str
    user: str
    definition: dict[str, Any]
    errors: dict[str, str] = field(default_factory=dict)  # block id -> inline error
    problem: str | None = None  # shown atop the modal: the app did not answer, say

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "definition": self.definition,
            "errors": self.errors,
            "problem": self.problem,
        }


@dataclass(kw_only=True)
class Trigger:
    user: str
    issued: float
    used: bool = False


@dataclass(kw_only=True)
class ResponseUrl:
    user: str
    channel: str
    command: str
    uses: int = 0


@dataclass(frozen=True, kw_only=True)
class ApiCall:
    """One Web API call of the bot, as the page's log shows it."""

    method: str
    error: str | None
    about: str  # who or what it concerned, in a few words

    def as_json(self) -> dict[str, Any]:
        return {"method": self.method, "error": self.error, "about": self.about}


TriggerProblem = Literal["invalid_trigger_id", "expired_trigger_id"]


@dataclass(kw_only=True)
class SlackState:
    clock: Callable[[], float] = time.monotonic
    messages: list[Message] = field(default_factory=list)
    stacks: dict[str, list[View]] = field(default_factory=dict)  # user -> open modals
    homes: dict[str, View] = field(default_factory=dict)  # user -> published App Home
    ims: dict[str, str] = field(default_factory=dict)  # DM channel -> its person (opened)
    triggers: dict[str, Trigger] = field(default_factory=dict)
    response_urls: dict[str, ResponseUrl] = field(default_factory=dict)
    log: deque[ApiCall] = field(default_factory=lambda: deque(maxlen=LOG_SIZE))
    version: int = 0
    closed: bool = False
    _next_change: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _last_ts: float = 0.0

    # -- change feed -----------------------------------------------------------------

    def changed(self) -> None:
        """Record a change and wake every page waiting for one."""
        self.version += 1
        self._wake()

    def _wake(self) -> None:
        woken, self._next_change = self._next_change, asyncio.Event()
        woken.set()

    async def wait_for_change(self, since: int, *, within: float) -> int:
        """The version once it is past `since`, or as it is after `within` seconds (or
        at once when the console closes)."""
        if self.version <= since and not self.closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._next_change.wait(), within)
        return self.version

    def close(self) -> None:
        """Wake every waiting page for good (the console is stopping)."""
        self.closed = True
        self._wake()

    # -- ids ---------------------------------------------------------------------------

    def next_ts(self) -> str:
        """A message ts as Slack writes them (seconds.microseconds), strictly increasing."""
        now = max(time.time(), self._last_ts + 0.000001)
        self._last_ts = now
        return f"{now:.6f}"

    def next_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):08d}"

    # -- messages --------------------------------------------------------------------

    def post(
        self,
        *,
        channel: str,
        user: str,
        text: str,
        blocks: list[Any] | None = None,
        thread_ts: str | None = None,
        only_for: str | None = None,
    ) -> Message:
        """A new message in `channel` (ephemeral when `only_for` names its one reader)."""
        message = Message(
            ts=self.next_ts(),
            channel=channel,
            user=user,
            text=text,
            blocks=blocks or [],
            thread_ts=thread_ts,
            only_for=only_for,
        )
        self.messages.append(message)
        self.changed()
        return message

    def answer(
        self, body: Mapping[str, Any], *, channel: str, to: str, thread_ts: str | None = None
    ) -> Message:
        """The app's answer to `to`'s slash command (its acknowledgement or a post to the
        command's response_url): theirs alone unless `response_type` is `in_channel`."""
        return self.post(
            channel=channel,
            user=BOT_USER_ID,
            text=str(body.get("text") or ""),
            blocks=list(body.get("blocks") or []),
            thread_ts=thread_ts,
            only_for=None if body.get("response_type") == "in_channel" else to,
        )

    def visible_to(self, message: Message, user: str) -> bool:
        """Whether `user` sees `message`: the channel's (their own ephemeral ones among
        them) for everyone, a direct message for its one person only."""
        if message.only_for not in (None, user):
            return False
        return message.channel == CHANNEL_ID or self.ims.get(message.channel) == user

    # -- direct messages ---------------------------------------------------------------

    @staticmethod
    def im_id(user: str) -> str:
        """The id of the bot's direct message channel with `user` (D + the user id's
        rest, the same every time, as Slack keeps one DM per pair)."""
        return "D" + user[1:]

    def open_im(self, user: str) -> tuple[str, bool]:
        """The bot's DM with `user`, opened if it was not: (its id, whether it was open)."""
        channel = self.im_id(user)
        was_open = channel in self.ims
        if not was_open:
            self.ims[channel] = user
            self.changed()
        return channel, was_open

    def find(self, channel: str, ts: str) -> Message | None:
        return next(
            (m for m in self.messages if m.channel == channel and m.ts == ts and not m.only_for),
            None,
        )

    def tell(self, user: str, channel: str, text: str, *, thread_ts: str | None = None) -> None:
        """Slack's own ephemeral note to `user` (the app failed to answer, say)."""
        self.post(channel=channel, user=SLACKBOT, text=text, thread_ts=thread_ts, only_for=user)

    # -- triggers and response URLs --------------------------------------------------------

    def issue_trigger(self, user: str) -> str:
        now = self.clock()
        for old in [key for key, t in self.triggers.items() if now - t.issued > TRIGGER_KEPT]:
            del self.triggers[old]  # long expired: "invalid" now rather than "expired"
        trigger_id = f"{next(self._ids)}.{secrets.token_hex(8)}"
        self.triggers[trigger_id] = Trigger(user=user, issued=now)
        return trigger_id

    def take_trigger(self, trigger_id: str) -> Trigger | TriggerProblem:
        """The trigger's person, once; a trigger used before or older than 3 s is refused
        as Slack refuses it."""
        trigger = self.triggers.get(trigger_id)
        if trigger is None or trigger.used:
            return "invalid_trigger_id"
        if self.clock() - trigger.issued > TRIGGER_SECONDS:
            return "expired_trigger_id"
        trigger.used = True
        return trigger

    def issue_response_url(self, *, user: str, channel: str, command: str) -> str:
        key = secrets.token_urlsafe(18)
        self.response_urls[key] = ResponseUrl(user=user, channel=channel, command=command)
        return key

    def use_response_url(self, key: str) -> ResponseUrl | None:
        """The command a response_url answers, up to RESPONSE_URL_USES times."""
        url = self.response_urls.get(key)
        if url is None or url.uses >= RESPONSE_URL_USES:
            return None
        url.uses += 1
        return url

    # -- views -------------------------------------------------------------------------

    def stack(self, user: str) -> list[View]:
        return self.stacks.setdefault(user, [])

    def find_view(self, view_id: str) -> View | None:
        for stack in self.stacks.values():
            for view in stack:
                if view.id == view_id:
                    return view
        return next((view for view in self.homes.values() if view.id == view_id), None)

    def new_view(self, user: str, definition: dict[str, Any], view_id: str | None = None) -> View:
        return View(
            id=view_id or self.next_id("V"),
            hash=secrets.token_hex(6),
            user=user,
            definition=definition,
        )

    def record(self, call: ApiCall) -> None:
        self.log.append(call)
        self.changed()
