"""The HTTP endpoint: aiohttp in front of the Bolt app.

`POST /slack/events` takes everything Slack sends (events, interactivity, slash
commands). The signature is checked here, before Bolt parses anything, so a bad,
missing, stale or malformed one is a 401 with no side effect (never a 500).
`GET /healthz`, `GET /readyz` and `GET /metrics` are bot.slack.probes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.errors import InputError
from bot.slack.after_ack import collecting
from bot.slack.probes import Probes, add_probe_routes
from bot.slack.signature import verify_signature

EVENTS_PATH = "/slack/events"
MAX_BODY_BYTES = 1024 * 1024  # Slack payloads are far smaller; refuse anything bigger

log = logging.getLogger(__name__)


def build_web_app(
    *,
    bolt_app: AsyncApp,
    signing_secret: str,
    clock: Callable[[], float] = time.time,
    probes: Probes | None = None,
) -> web.Application:
    """An aiohttp application serving Bolt behind our own signature check."""

    async def slack_events(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        try:
            verify_signature(
                signing_secret=signing_secret,
                timestamp=request.headers.get("X-Slack-Request-Timestamp"),
                signature=request.headers.get("X-Slack-Signature"),
                body=body,
                now=clock(),
            )
            text = body.decode("utf-8")
        except (InputError, UnicodeDecodeError) as error:
            log.info("refusing a Slack request: %s", error)
            return web.json_response({"error": "invalid request"}, status=401)
        bolt_request = AsyncBoltRequest(
            body=text,
            query=request.query_string,
            headers={key.lower(): request.headers.getall(key) for key in request.headers},
        )
        with collecting() as after_ack:
            try:
                bolt_response = await bolt_app.async_dispatch(bolt_request)
                response = await to_aiohttp_response(bolt_response)
                await response.prepare(request)
                await response.write_eof()
            except BaseException:
                after_ack.discard()
                raise
        after_ack.start()  # Slack has its answer: now the slow work may begin
        return response

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post(EVENTS_PATH, slack_events)
    add_probe_routes(app, probes)
    return app
