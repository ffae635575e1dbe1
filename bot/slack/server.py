"""The HTTP endpoint: aiohttp in front of the Bolt app.

`POST /slack/events` takes everything Slack sends (events, interactivity, slash
commands). The signature is checked here, before Bolt parses anything, so a bad,
missing, stale or malformed one is a 401 with no side effect (never a 500). A request
whose signature was seen before (a replay inside the signature's 5-minute window) is
answered 200 and not handled again (bot.slack.dedupe; remembered in the database, so
whichever replica the replay reaches).
`GET /healthz`, `GET /readyz` and `GET /metrics` are bot.slack.probes. `serve` listens
before the bot can take Slack's requests (`StartingApp`): until it can, the Slack path
answers 503 and the probes say why.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.errors import InputError
from bot.slack.after_ack import collecting
from bot.slack.dedupe import RequestMemory, first_delivery
from bot.slack.probes import ProbeSource, Readiness, add_probe_routes
from bot.slack.signature import verify_signature

EVENTS_PATH = "/slack/events"
MAX_BODY_BYTES = 1024 * 1024  # Slack payloads are far smaller; refuse anything bigger

log = logging.getLogger(__name__)


def build_web_app(
    *,
    bolt_app: AsyncApp,
    signing_secret: str,
    memory: RequestMemory | None,
    clock: Callable[[], float] = time.time,
    probes: ProbeSource | None = None,
) -> web.Application:
    """An aiohttp application serving Bolt behind our own signature check and, with a
    `memory` (the surface's `requests`), the replay check (None: none, for benchmarks'
    floors)."""
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post(
        EVENTS_PATH,
        events_handler(
            bolt_app=bolt_app, signing_secret=signing_secret, memory=memory, clock=clock
        ),
    )
    add_probe_routes(app, probes)
    return app


class StartingApp:
    """The HTTP endpoint from the moment `serve` listens, before the bot can take Slack's
    requests: `POST /slack/events` answers 503 (Slack tries events again) until
    `serve_slack`, and the probes say why through `readiness`."""

    def __init__(self, readiness: Readiness) -> None:
        self._handler: Handler | None = None
        self.app = web.Application(client_max_size=MAX_BODY_BYTES)
        self.app.router.add_post(EVENTS_PATH, self._events)
        add_probe_routes(self.app, readiness)

    def serve_slack(
        self, *, bolt_app: AsyncApp, signing_secret: str, memory: RequestMemory | None
    ) -> None:
        self._handler = events_handler(
            bolt_app=bolt_app, signing_secret=signing_secret, memory=memory
        )

    async def _events(self, request: web.Request) -> web.StreamResponse:
        if self._handler is None:
            return web.json_response({"error": "starting"}, status=503)
        return await self._handler(request)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def events_handler(
    *,
    bolt_app: AsyncApp,
    signing_secret: str,
    memory: RequestMemory | None,
    clock: Callable[[], float] = time.time,
) -> Handler:
    """`POST /slack/events`: the signature and replay checks, then Bolt (module doc)."""

    async def slack_events(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        timestamp = request.headers.get("X-Slack-Request-Timestamp")
        signature = request.headers.get("X-Slack-Signature")
        now = clock()
        try:
            verify_signature(
                signing_secret=signing_secret,
                timestamp=timestamp,
                signature=signature,
                body=body,
                now=now,
            )
            text = body.decode("utf-8")
        except (InputError, UnicodeDecodeError) as error:
            log.info("refusing a Slack request: %s", error)
            return web.json_response({"error": "invalid request"}, status=401)
        if memory is not None:
            assert timestamp is not None  # verified above
            assert signature is not None
            if not await first_delivery(memory, signature=signature, timestamp=timestamp, now=now):
                log.warning("answering a replayed Slack request (a signature seen before) once")
                return web.Response(status=200)
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

    return slack_events
