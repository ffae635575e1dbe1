"""Waiting Slack out: a Web API call tried again while Slack is rate limiting or failing.

slack_sdk's retry handlers (bot.slack.gateway) absorb a short blip: a lost connection
once, a 429 twice. A longer outage (Slack answering 429 or 5xx for a minute) would
otherwise drop what the bot was posting: a run's thread, a review card, its update, an
answer. `patiently` tries such a call again until it goes through or `patience` runs
out: after a 429, when Slack's Retry-After says; after a 5xx or a refused connection,
after a backoff that doubles from BACKOFF_FIRST_SECONDS up to BACKOFF_MAX_SECONDS. Any
other failure (Slack said no: `channel_not_found`, a bad block) is not tried again.

A post is not idempotent at Slack. It is tried again only when it did not go through:
Slack refused it (429), failed it (5xx: its contract is that nothing was posted), or the
connection was refused. A call whose answer was lost after Slack took it (a timeout) is
not tried again: a second card is worse than a late one, and the card can be found from
`/approvals` and App Home meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError

from bot.errors import SlackError
from bot.slack.gateway import retry_after

log = logging.getLogger(__name__)
T = TypeVar("T")

PATIENCE_SECONDS = 600.0
BACKOFF_FIRST_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 15.0
HTTP_SERVER_ERRORS = (500, 599)
Sleep = Callable[[float], Awaitable[None]]


def transient_wait(error: BaseException, attempt: int) -> float | None:
    """Seconds to wait before trying the call that failed with `error` again (its
    `attempt`-th failure, from 1); None when it must not be tried again."""
    if isinstance(error, SlackError):
        wait = retry_after(error)
        if wait is not None:
            return wait
        if not _server_error(error):
            return None
    elif not isinstance(error, aiohttp.ClientConnectorError):
        return None
    backoff: float = min(BACKOFF_FIRST_SECONDS * 2 ** (attempt - 1), BACKOFF_MAX_SECONDS)
    return backoff


def _server_error(error: SlackError) -> bool:
    """Whether Slack (or a proxy before it) answered the call with an HTTP 5xx."""
    cause = error.__cause__
    if not isinstance(cause, SlackApiError) or cause.response is None:
        return False
    response = cause.response  # a SlackResponse, or aiohttp's for a body that is not JSON
    status = getattr(response, "status_code", getattr(response, "status", None))
    return isinstance(status, int) and HTTP_SERVER_ERRORS[0] <= status <= HTTP_SERVER_ERRORS[1]


async def patiently(
    call: Callable[[], Awaitable[T]],
    *,
    what: str,
    patience: float = PATIENCE_SECONDS,
    sleep: Sleep = asyncio.sleep,
) -> T:
    """`call()`, again after each transient failure (see the module doc) until it goes
    through; past `patience` seconds the last failure is raised."""
    deadline = time.monotonic() + patience
    attempt = 0
    while True:
        try:
            return await call()
        except (SlackError, aiohttp.ClientConnectorError) as error:
            attempt += 1
            wait = transient_wait(error, attempt)
            if wait is None or time.monotonic() + wait > deadline:
                raise
            log.info("Slack did not take %s (%s); trying again in %.2f s", what, error, wait)
            await sleep(wait)
