"""`/mcp` on the bot's own aiohttp server: the bearer token first, then the SDK.

A request without a token, or with one no client of the gateway's file has, is answered
401 before the MCP SDK sees it, and counted (`mcp_unauthorized_requests`); the token is
never logged. The token decides who calls (its client: the channel for the cards, the
Slack user it acts for); no header or field the client sets does. An authenticated
request is served by the SDK's transport on the same event loop (bot.mcp.asgi), with
the caller in its ASGI scope, where the tool handlers read it (bot.mcp.server).
"""

from __future__ import annotations

import logging

from aiohttp import web

from bot.mcp.asgi import serve_asgi
from bot.mcp.config import GatewayConfig
from bot.mcp.gateway import Caller
from bot.mcp.server import CALLER_KEY, Transport
from bot.mcp.telemetry import McpMetrics
from bot.mcp.tokens import bearer_token, call_key_secret, client_for

MCP_PATH = "/mcp"

log = logging.getLogger(__name__)


class McpEndpoint:
    """The `/mcp` route of a web application."""

    def __init__(
        self, transport: Transport, config: GatewayConfig, metrics: McpMetrics | None = None
    ) -> None:
        self._transport = transport
        self._clients = [(client.token_digests, client) for client in config.clients.values()]
        self._metrics = metrics or McpMetrics(None)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", MCP_PATH, self.handle)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        token = bearer_token(request.headers.get("Authorization"))
        if token is None:
            return self._refuse(request, "missing")
        client = client_for(token, self._clients)
        if client is None:
            return self._refuse(request, "invalid")
        caller = Caller(client=client, call_secret=call_key_secret(token))
        app = self._transport.app_for(await request.read())
        return await serve_asgi(app, request, extra={CALLER_KEY: caller})

    def _refuse(self, request: web.Request, reason: str) -> web.Response:
        self._metrics.refused(reason)
        log.info("mcp: refused a request from %s: %s bearer token", request.remote, reason)
        return web.json_response(
            {"error": f"unauthorized: {reason} bearer token"},
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="approvals-bot"'},
        )
