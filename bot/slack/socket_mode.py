"""Socket Mode: the Bolt app over a WebSocket the bot opens to Slack.

slack_sdk's client asks Slack for a WebSocket URL (`apps.connections.open`, with the
app-level token), connects, and when a connection fails logs the exception with its
traceback and tries again every 10 s, forever, even for a token Slack refuses. Here the
first URL is asked for before connecting: a refused app token stops start-up with one
line (`SLACK_APP_TOKEN rejected by Slack: invalid_auth`), an unreachable API with one
line naming it. The client's own log lines go through a logger that keeps their one-line
message and drops the traceback (a network failure is not a bug of ours), so a
WebSocket that cannot be reached reads as one line per try.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.errors import SlackApiError

from bot.errors import ConfigError

SOCKET_LOGGER = "bot.slack.socket_mode.client"


class _OneLine(logging.Filter):
    """A record without its traceback: its message already says what failed."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return True


def _client_logger() -> logging.Logger:
    logger = logging.getLogger(SOCKET_LOGGER)
    if not any(isinstance(known, _OneLine) for known in logger.filters):
        logger.addFilter(_OneLine())
    return logger


@contextlib.asynccontextmanager
async def socket_mode(app: AsyncApp, app_token: str) -> AsyncIterator[AsyncSocketModeHandler]:
    """Connected to Slack over Socket Mode for the block; closed after it."""
    handler = AsyncSocketModeHandler(app, app_token, logger=_client_logger())
    try:
        handler.client.wss_uri = await _first_url(handler, app_token)
        await handler.connect_async()  # type: ignore[no-untyped-call]
        yield handler
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]


async def _first_url(handler: AsyncSocketModeHandler, app_token: str) -> str:
    try:
        response = await handler.client.web_client.apps_connections_open(app_token=app_token)
    except SlackApiError as error:
        code = error.response.get("error") if error.response is not None else None
        raise ConfigError(f"SLACK_APP_TOKEN rejected by Slack: {code or error}") from None
    except (aiohttp.ClientError, OSError, TimeoutError) as error:
        raise ConfigError(
            f"cannot reach Slack to open Socket Mode: {error or type(error).__name__}"
        ) from None
    url = response.get("url")
    if not isinstance(url, str):
        raise ConfigError("Slack answered apps.connections.open without a WebSocket URL")
    return url
