"""What operators and orchestrators ask the process: `GET /healthz` (alive),
`GET /readyz` (able to serve) and `GET /metrics` (Prometheus).

`/healthz` answers 200 while the process serves its HTTP port. `/readyz` answers 200
only when the database answers with the schema this build expects and the last Slack
Web API call reached Slack with a token it accepts; otherwise 503 with the reason in one
line (`{"ready": false, "reason": "..."}`). A `detail` (the MCP gateway's upstreams, up or
down) is added to either answer without deciding it. `serve` and `socket` listen before they
reach Slack (`Readiness`): meanwhile `/readyz` says what they wait for ("waiting for
Slack: ..." while `auth.test` is tried again). `/metrics` first reads the oldest pending
approval into its gauge, then answers the registry in the text exposition format.

`serve` mounts them beside `POST /slack/events`; `socket` serves them alone on HOST:PORT
(Socket Mode needs no inbound port for Slack, only for these).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web
from aiohttp.web_log import AccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from bot.errors import ApprovalsError
from bot.metrics import CONTENT_TYPE, Metrics
from bot.service import ApprovalService
from bot.slack.observed import SlackHealth

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Probes:
    """The parts `/readyz` and `/metrics` read."""

    service: ApprovalService
    health: SlackHealth
    metrics: Metrics
    detail: Callable[[], Mapping[str, Any]] | None = None  # more for /readyz (the gateway)

    async def not_ready(self) -> str | None:
        """Why the bot cannot serve now, or None."""
        return await self.service.readiness() or self.health.problem

    def details(self) -> dict[str, Any]:
        """What /readyz says besides whether the bot is ready."""
        return dict(self.detail()) if self.detail is not None else {}

    async def observe_pending(self) -> None:
        """Read the oldest pending approval into its gauge (a failure is logged: the rest
        of the registry is still worth reading)."""
        try:
            await self.service.observe_pending()
        except ApprovalsError as error:
            log.warning("cannot read the oldest pending approval for /metrics: %s", error)


class Readiness:
    """What the probes read from the moment `serve` or `socket` listens: while the bot
    starts, why it is not ready yet (`waiting`: opening, waiting for Slack and why,
    recovering); once it serves, its Probes."""

    def __init__(self, metrics: Metrics, *, reason: str = "starting") -> None:
        self.metrics = metrics
        self._reason = reason
        self._probes: Probes | None = None

    def waiting(self, reason: str) -> None:
        self._reason = reason

    def serving(self, probes: Probes) -> None:
        self._probes = probes

    async def not_ready(self) -> str | None:
        return self._reason if self._probes is None else await self._probes.not_ready()

    def details(self) -> dict[str, Any]:
        return {} if self._probes is None else self._probes.details()

    async def observe_pending(self) -> None:
        if self._probes is not None:
            await self._probes.observe_pending()


class ProbeSource(Protocol):
    """What the probe routes read (Probes, or Readiness while the bot starts)."""

    @property
    def metrics(self) -> Metrics: ...

    async def not_ready(self) -> str | None: ...

    def details(self) -> dict[str, Any]: ...

    async def observe_pending(self) -> None: ...


def add_probe_routes(app: web.Application, probes: ProbeSource | None) -> None:
    """`/healthz` always; `/readyz` and `/metrics` when there are `probes`."""

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app.router.add_get(HEALTH_PATH, healthz)
    if probes is None:
        return

    async def readyz(request: web.Request) -> web.Response:
        reason = await probes.not_ready()
        more = probes.details()
        if reason is not None:
            return web.json_response({"ready": False, "reason": reason, **more}, status=503)
        return web.json_response({"ready": True, **more})

    async def metrics(request: web.Request) -> web.Response:
        await probes.observe_pending()
        body = probes.metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    app.router.add_get(READY_PATH, readyz)
    app.router.add_get(METRICS_PATH, metrics)


PROBE_PATHS = frozenset({HEALTH_PATH, READY_PATH, METRICS_PATH})


class AccessLog(AccessLogger):
    """aiohttp's access log, but a probe's request is a DEBUG line: orchestrators and
    scrapers ask every few seconds, and those lines would bury the rest at INFO."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        if request.path not in PROBE_PATHS:
            super().log(request, response, time)
        elif self.logger.isEnabledFor(logging.DEBUG):
            self.logger.debug(
                '%s "%s %s" %s %.3fs',
                request.remote, request.method, request.path, response.status, time,
            )  # fmt: skip


def build_probe_app(probes: ProbeSource) -> web.Application:
    """The probes alone (Socket Mode's HTTP port)."""
    app = web.Application()
    add_probe_routes(app, probes)
    return app
