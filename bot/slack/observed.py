"""What the Slack surface measures: ack latency per request kind, Web API failures, and
whether Slack still accepts the bot.

- `TimeAcks` is the first of our Bolt middlewares: the time from a request reaching our
  listeners to the acknowledgement (with `process_before_response`, the listener's
  return), by kind (`command`, `block_actions`, `view_submission`, `event`, ...), in both
  HTTP and Socket Mode.
- `ObservedWebClient` is slack_sdk's client with every call counted when it fails (by
  method and Slack's error code, or `connection`), whoever makes it (the gateway, the
  group and channel directories, Bolt), and `SlackHealth` remembering whether the last
  call reached Slack with a token it accepts: `/readyz` reports it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.metrics import Metrics

log = logging.getLogger(__name__)

TOKEN_REFUSED = frozenset(
    {
        "invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive",
        "org_login_required", "ekm_access_denied", "team_access_not_granted",
    }
)  # fmt: skip
"""Slack's answers that mean the bot's token no longer works: nothing will until an
operator acts (reinstall, a new token)."""


class SlackHealth:
    """Whether the last Web API call reached Slack with a token Slack accepts. An error
    about the call itself (`channel_not_found`) still says Slack answers; a refused
    token, an unreachable API or a 5xx do not."""

    def __init__(self) -> None:
        self.problem: str | None = "no Slack call yet"

    def answered(self) -> None:
        self.problem = None

    def failed(self, method: str, error: str) -> None:
        self.problem = f"Slack {method} failed: {error}"


class ObservedWebClient(AsyncWebClient):
    """AsyncWebClient whose every call updates `health` and counts its failures."""

    def __init__(self, *, metrics: Metrics | None, health: SlackHealth, **options: Any) -> None:
        super().__init__(**options)
        self._metrics = metrics
        self._health = health

    async def api_call(self, api_method: str, **options: Any) -> Any:
        try:
            response = await super().api_call(api_method, **options)
        except SlackApiError as error:
            self._slack_said(api_method, error)
            raise
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            self._count(api_method, "connection")
            self._health.failed(api_method, f"unreachable ({error or type(error).__name__})")
            raise
        self._health.answered()
        return response

    def _slack_said(self, method: str, error: SlackApiError) -> None:
        response = error.response
        code = response.get("error") if response is not None else None
        status = response.status_code if response is not None else None
        code = code if isinstance(code, str) else f"http_{status}"
        self._count(method, code)
        if code in TOKEN_REFUSED or (isinstance(status, int) and status >= 500):
            self._health.failed(method, code)
        else:
            self._health.answered()

    def _count(self, method: str, code: str) -> None:
        if self._metrics is not None:
            self._metrics.slack_api_errors.labels(method=method, error=code).inc()


class TimeAcks(AsyncMiddleware):
    """Observes each request's time to its acknowledgement, by kind (see module doc)."""

    def __init__(self, metrics: Metrics, *, clock: Callable[[], float] = time.perf_counter):
        self._metrics = metrics
        self._clock = clock

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        started = self._clock()
        try:
            return await next()
        finally:
            kind = request_kind(req.body)
            self._metrics.slack_ack_latency.labels(kind=kind).observe(self._clock() - started)


def request_kind(body: dict[str, Any]) -> str:
    """`command`, `event`, or the interactivity payload's type (`block_actions`,
    `view_submission`, ...); `other` for anything else (bounded: a label value)."""
    if "command" in body:
        return "command"
    kind = body.get("type")
    if kind == "event_callback":
        return "event"
    if kind in ("block_actions", "view_submission", "view_closed", "shortcut"):
        return str(kind)
    return "other"
