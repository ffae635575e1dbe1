"""Direct messages from the bot: a card's copy, a requester's outcome.

A direct message is two Web API calls: `conversations.open` (the bot's conversation
with the person; its id is remembered, so each person costs it once) and
`chat.postMessage` there. The messages go out one at a time, and when Slack answers 429
(rate limited) the sender waits the Retry-After it was given and tries again, for up to
`patience` in all: a burst of cards to many approvers is slowed down to what Slack
takes, and nothing is dropped on the way (past the patience the caller hears a
SlackError; the service tries that copy again later). One at a time, so that a wait
holds back the messages behind it instead of each of them meeting Slack's limit again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from bot.errors import SlackError
from bot.slack.gateway import SlackGateway, retry_after

log = logging.getLogger(__name__)
T = TypeVar("T")

PATIENCE_SECONDS = 600.0
Sleep = Callable[[float], Awaitable[None]]


class DirectMessages:
    """Sends direct messages through `slack`, waiting out rate limits."""

    def __init__(
        self,
        slack: SlackGateway,
        *,
        patience: float = PATIENCE_SECONDS,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._slack = slack
        self._patience = patience
        self._sleep = sleep
        self._channels: dict[str, str] = {}  # user -> the bot's DM channel with them
        self._one_at_a_time = asyncio.Lock()

    async def post(self, *, user: str, text: str, blocks: list[Any]) -> tuple[str, str]:
        """Post to `user`'s direct messages; (channel, ts) of the message."""
        async with self._one_at_a_time:
            deadline = time.monotonic() + self._patience
            channel = self._channels.get(user)
            if channel is None:
                channel = await self._patiently(deadline, lambda: self._slack.open_dm(user=user))
                self._channels[user] = channel
            dm = channel
            try:
                ts = await self._patiently(
                    deadline, lambda: self._slack.post(channel=dm, text=text, blocks=blocks)
                )
            except SlackError:
                self._channels.pop(user, None)  # opened again next time, in case it was gone
                raise
            return channel, ts

    async def _patiently(self, deadline: float, call: Callable[[], Awaitable[T]]) -> T:
        """`call()`, again after each 429's Retry-After until `deadline`."""
        while True:
            try:
                return await call()
            except SlackError as error:
                wait = retry_after(error)
                if wait is None or time.monotonic() + wait > deadline:
                    raise
                log.info("Slack is rate limiting direct messages; trying again in %.0f s", wait)
                await self._sleep(wait)
