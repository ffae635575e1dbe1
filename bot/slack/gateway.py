"""The Slack Web API as the bot uses it: post and update messages, tell one person
privately, answer a slash command, open a modal, publish App Home.

slack_sdk's AsyncWebClient runs on an aiohttp session the caller owns (and closes),
pointed at SLACK_API_URL, with slack_sdk's retry handlers: a lost connection is retried
once, a 429 up to twice after its Retry-After. Every failure is a SlackError naming the
method and Slack's error code.

Every text the bot sends to Slack passes here, so this is where redaction is enforced:
the `text`, `blocks` and `view` of each call (and a slash command's answer) go through
`bot.credentials.redact_text`, every string but the structural ones (ids, action and
block ids, button values, private metadata). The builders redact before they clip
(bot.slack.blocks), so this pass normally changes nothing; when it does, a builder missed
something and the gateway says so in the log (without the text).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

import aiohttp
import orjson
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.credentials import redact_text
from bot.errors import SlackError
from bot.metrics import Metrics
from bot.slack.observed import ObservedWebClient, SlackHealth

RATE_LIMIT_RETRIES = 2
HTTP_TOO_MANY_REQUESTS = 429
ViewOutcome = Literal["opened", "trigger_expired"]
ViewUpdate = Literal["updated", "gone"]
REDACTED_ARGUMENTS = ("text", "blocks", "view")
"""The arguments of a Web API call that people read."""
STRUCTURAL_KEYS = frozenset(
    {
        "type", "action_id", "block_id", "callback_id", "private_metadata", "value",
        "style", "url", "image_url", "external_id", "hash", "view_id", "trigger_id",
    }
)  # fmt: skip
"""Keys whose string values Slack reads as ids or data, never shows as text."""
log = logging.getLogger(__name__)


def redact_outgoing(value: Any) -> Any:
    """`value` (a text, blocks, a view) with every shown string redacted.

    The same texts go out again and again (a card's call block in its post, each
    approver's modal and every update of the card; labels and titles everywhere), so the
    redaction of texts up to REMEMBERED_TEXT_CHARS is remembered: it is a function of
    the text alone. Plain dicts and lists (what the builders make) are walked without
    the slower abstract-type checks."""
    kind = type(value)
    if kind is str:
        return _redacted_text(value)
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        return {
            key: item if key in STRUCTURAL_KEYS and type(item) is str else redact_outgoing(item)
            for key, item in value.items()
        }
    if kind is list or isinstance(value, list | tuple):
        return [redact_outgoing(item) for item in value]
    if isinstance(value, str):  # a str subclass
        return redact_text(value)
    return value


REMEMBERED_TEXT_CHARS = 4000  # past Block Kit's longest text (a section's 3,000)
_remembered_redaction = functools.lru_cache(maxsize=2048)(redact_text)


def _redacted_text(text: str) -> str:
    if len(text) <= REMEMBERED_TEXT_CHARS:
        return _remembered_redaction(text)
    return redact_text(text)


def web_api_session() -> aiohttp.ClientSession:
    """The HTTP session of the Web API client: its JSON bodies (a card's blocks on every
    update) written by orjson, the same JSON as the json module's in a third of the time
    (compact, UTF-8 rather than \\u escapes); no cookie jar (the Web API authenticates by
    token, and a jar costs every request a lookup)."""
    return aiohttp.ClientSession(json_serialize=_json_text, cookie_jar=aiohttp.DummyCookieJar())


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # what orjson does not write (a non-str key, a huge int): as before
        return json.dumps(value)


def build_web_client(
    *,
    token: str,
    api_url: str,
    session: aiohttp.ClientSession,
    timeout: int = 10,
    metrics: Metrics | None = None,
    health: SlackHealth | None = None,
) -> AsyncWebClient:
    """The Web API client; its failures are counted in `metrics` and its last answer
    kept in `health` (bot.slack.observed)."""
    return ObservedWebClient(
        metrics=metrics,
        health=health or SlackHealth(),
        token=token,
        base_url=api_url,
        session=session,
        timeout=timeout,
        retry_handlers=_retry_handlers(),
    )


def _retry_handlers() -> list[AsyncRetryHandler]:
    """A lost connection is retried once; a 429 up to twice, after its Retry-After."""
    return [
        AsyncConnectionErrorRetryHandler(max_retry_count=1),
        AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
    ]


class SlackGateway:
    """The Web API calls of the bot, over one client and its session."""

    def __init__(self, client: AsyncWebClient, *, session: aiohttp.ClientSession) -> None:
        self._client = client
        self._session = session
        # A slash command's response_url comes from a signed payload, yet we only post to
        # Slack's hooks host, or to the host of the configured Web API (a local emulator).
        self._response_hosts = {"hooks.slack.com", urlsplit(client.base_url).netloc}

    @classmethod
    def open(
        cls,
        *,
        token: str,
        api_url: str,
        session: aiohttp.ClientSession,
        metrics: Metrics | None = None,
        health: SlackHealth | None = None,
    ) -> SlackGateway:
        client = build_web_client(
            token=token, api_url=api_url, session=session, metrics=metrics, health=health
        )
        return cls(client, session=session)

    @property
    def client(self) -> AsyncWebClient:
        """The Web API client (for other Slack readers, e.g. the group directory)."""
        return self._client

    async def auth_test(self) -> dict[str, Any]:
        """Who the token is: its team, organisation, app and bot user (auth.test)."""
        try:
            return await self._call("auth_test")
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise SlackError(f"Slack auth.test failed: {error or type(error).__name__}") from error

    async def post(self, *, channel: str, text: str, **extra: Any) -> str:
        """chat.postMessage; the new message's ts."""
        response = await self._call("chat_postMessage", channel=channel, text=text, **extra)
        ts = response.get("ts")
        if not isinstance(ts, str):
            raise SlackError("chat.postMessage answered without a message ts")
        return ts

    async def update(self, *, channel: str, ts: str, text: str, blocks: list[Any]) -> None:
        await self._call("chat_update", channel=channel, ts=ts, text=text, blocks=blocks)

    async def open_dm(self, *, user: str) -> str:
        """conversations.open: the id of the bot's direct message channel with `user`."""
        response = await self._call("conversations_open", users=user)
        channel = response.get("channel")
        channel_id = channel.get("id") if isinstance(channel, dict) else None
        if not isinstance(channel_id, str):
            raise SlackError("conversations.open answered without a channel id")
        return channel_id

    async def tell(
        self,
        *,
        channel: str,
        user: str,
        text: str,
        thread_ts: str | None = None,
        blocks: list[Any] | None = None,
    ) -> None:
        """An ephemeral message only `user` sees (why a click was refused, help, ...)."""
        await self._call(
            "chat_postEphemeral",
            channel=channel,
            user=user,
            text=text,
            thread_ts=thread_ts,
            blocks=blocks,
        )

    async def respond(self, *, response_url: str, text: str) -> None:
        """Answer a slash command or a click privately through its response_url (works
        where the bot, or the person, is not a channel member, unlike
        chat.postEphemeral); never replaces the message clicked on."""
        if urlsplit(response_url).netloc not in self._response_hosts:
            raise SlackError(
                f"refusing to post to response_url host {urlsplit(response_url).netloc!r}"
            )
        webhook = AsyncWebhookClient(
            response_url, session=self._session, retry_handlers=_retry_handlers()
        )
        response = await webhook.send(
            text=_redacted("response_url", "text", text),
            response_type="ephemeral",
            replace_original=False,
        )
        if response.status_code != 200:
            raise SlackError(
                f"Slack response_url answered HTTP {response.status_code}: {response.body[:200]}"
            )

    async def open_view(self, *, trigger_id: str, view: dict[str, Any]) -> ViewOutcome:
        """Open a modal. Slack's trigger ids live 3 s: a late one is `trigger_expired`."""
        try:
            await self._call("views_open", trigger_id=trigger_id, view=view)
        except SlackError as error:
            if api_error_code(error) in ("expired_trigger_id", "invalid_trigger_id"):
                return "trigger_expired"
            raise
        return "opened"

    async def update_view(
        self, *, view_id: str, view: dict[str, Any], view_hash: str | None = None
    ) -> ViewUpdate:
        """Replace an open modal (views.update). With `view_hash` (the one its payload
        carried), a modal changed meanwhile, or closed, is left alone: "gone"."""
        try:
            await self._call("views_update", view_id=view_id, view=view, hash=view_hash)
        except SlackError as error:
            if api_error_code(error) in ("hash_conflict", "not_found"):
                return "gone"
            raise
        return "updated"

    async def publish_home(self, *, user: str, view: dict[str, Any]) -> None:
        await self._call("views_publish", user_id=user, view=view)

    async def _call(self, method: str, **arguments: Any) -> dict[str, Any]:
        arguments = {
            key: _redacted(method, key, value) if key in REDACTED_ARGUMENTS else value
            for key, value in arguments.items()
            if value is not None
        }
        try:
            response = await getattr(self._client, method)(**arguments)
        except SlackApiError as error:
            code = error.response.get("error") if error.response is not None else None
            raise SlackError(f"Slack {method.replace('_', '.')} failed: {code or error}") from error
        data: dict[str, Any] = dict(response.data) if isinstance(response.data, dict) else {}
        return data


def _redacted(method: str, key: str, value: Any) -> Any:
    redacted = redact_outgoing(value)
    if redacted != value:
        log.warning("redacted a credential in the %s of %s (its builder had not)", key, method)
    return redacted


def retry_after(error: SlackError) -> float | None:
    """The seconds Slack asked to wait when it answered the call 429 (rate limited)."""
    cause = error.__cause__
    if not isinstance(cause, SlackApiError) or cause.response is None:
        return None
    if cause.response.status_code != HTTP_TOO_MANY_REQUESTS:
        return None
    headers = {key.lower(): value for key, value in (cause.response.headers or {}).items()}
    found = headers.get("retry-after")
    value = found[0] if isinstance(found, list) and found else found
    try:
        return max(float(str(value)), 0.0) if value is not None else 1.0
    except ValueError:
        return 1.0


def api_error_code(error: SlackError) -> str | None:
    """Slack's error code when Slack answered the call with one (None: no answer)."""
    cause = error.__cause__
    if isinstance(cause, SlackApiError) and cause.response is not None:
        code = cause.response.get("error")
        return code if isinstance(code, str) else None
    return None
