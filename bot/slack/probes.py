"""What operators and orchestrators ask the process: `GET /healthz` (alive),
`GET /readyz` (able to serve) and `GET /metrics` (Prometheus).

`/healthz` answers 200 while the process serves its HTTP port. `/readyz` answers 200
only when the database answers with the schema this build expects and the last Slack
Web API call reached Slack with a token it accepts; otherwise 503 with the reason in one
line (`{"ready": false, "reason": "..."}`). A `detail` (the MCP gateway's upstreams, up or
down) is added to either answer without deciding it. `/metrics` first reads the oldest pending
approval into its gauge, then answers the registry in the text exposition format.

`serve` mounts them beside `POST /slack/events`; `socket` serves them alone on HOST:PORT
(Socket Mode needs no inbound port for Slack, only for these).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

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


def add_probe_routes(app: web.Application, probes: Probes | None) -> None:
    """`/healthz` always; `/readyz` and `/metrics` when there are `probes`."""

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app.router.add_get(HEALTH_PATH, healthz)
    if probes is None:
        return

    async def readyz(request: web.Request) -> web.Response:
        reason = await probes.not_ready()
        more = dict(probes.detail()) if probes.detail is not None else {}
        if reason is not None:
            return web.json_response({"ready": False, "reason": reason, **more}, status=503)
        return web.json_response({"ready": True, **more})

    async def metrics(request: web.Request) -> web.Response:
        try:
            await probes.service.observe_pending()
        except ApprovalsError as error:  # the rest of the registry is still worth reading
            log.warning("cannot read the oldest pending approval for /metrics: %s", error)
        body = probes.metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    app.router.add_get(READY_PATH, readyz)
    app.router.add_get(METRICS_PATH, metrics)


def build_probe_app(probes: Probes) -> web.Application:
    """The probes alone (Socket Mode's HTTP port)."""
    app = web.Application()
    add_probe_routes(app, probes)
    return app
