"""The MCP gateway as `serve` and `socket` run it, when `APPROVALS_MCP` names its file.

`GatewaySetup.from_env` reads and checks the file (every problem at once, with the
environment variables it names) before anything opens. While the bot opens, the setup
registers the gateway's engine (agent `mcp`) beside the others and puts its run watch in
front of the Slack notifier. `mount` puts `/mcp` on the bot's port before it listens
(it answers 503 while the bot starts); once the service exists, `running` connects the
upstreams (waiting a little for each, so that recovery finds them), starts the SDK's
transport and serves `/mcp` with it until the block ends. `/readyz` reports each
upstream (an upstream that is down does not make the bot unready).

A policy names the gateway's tools (`[tools.<upstream>__<tool>]`) before the upstreams
list them: `gateway_tools_in` (bot.mcp.config_file) reads which of its tables are the
gateway's, for `serve` and `policy check` alike.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from bot.errors import ConfigError
from bot.mcp.config import MCP_ENV, GatewayConfig
from bot.mcp.config_file import gateway_tools_in, load_gateway_config, missing_environment
from bot.mcp.engine import McpEngine
from bot.mcp.gateway import Gateway
from bot.mcp.telemetry import McpMetrics
from bot.metrics import Metrics
from bot.policy.loading import POLICY_ENV
from bot.policy.rules import Policy
from bot.runtime import AgentRegistry
from bot.service import ApprovalService, Notifier, TaskOwner
from bot.service.mcp_calls import McpCalls, RunWatch

if TYPE_CHECKING:
    from aiohttp import web

    from bot.mcp.http import McpEndpoint

log = logging.getLogger(__name__)

CONNECT_SECONDS = 10.0  # how long start-up waits for the upstreams before it goes on


class GatewaySetup:
    def __init__(
        self, config: GatewayConfig, *, environ: Mapping[str, str], metrics: Metrics | None
    ) -> None:
        from bot.mcp.upstreams import Upstreams  # the MCP SDK, only when configured

        self.config = config
        self.metrics = McpMetrics(metrics)
        self.upstreams = Upstreams(config, environ=environ, metrics=self.metrics)
        self.engine = McpEngine(self.upstreams, config, self.metrics)
        self._watch: RunWatch | None = None
        self._gateway: Gateway | None = None
        self._endpoint: McpEndpoint | None = None

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str], *, metrics: Metrics | None
    ) -> GatewaySetup | None:
        path = environ.get(MCP_ENV, "").strip()
        if not path:
            return None
        config = load_gateway_config(path)
        missing = missing_environment(config, environ)
        if missing:
            raise ConfigError(f"MCP gateway file {config.source}: " + "; ".join(missing))
        try:
            return cls(config, environ=environ, metrics=metrics)
        except ImportError as error:
            raise ConfigError(
                f"{MCP_ENV} is set but the MCP SDK is not installed ({error}); "
                "pip install -e '.[mcp]' in your approvals-bot checkout"
            ) from None

    def tools_named_by_policy(self, environ: Mapping[str, str]) -> list[str]:
        """The gateway's tools the policy file (`APPROVALS_POLICY`) has tables for."""
        path = environ.get(POLICY_ENV, "").strip()
        return gateway_tools_in(path, self.config) if path else []

    def register(self, registry: AgentRegistry, policy: Policy | None) -> None:
        """Register the gateway's engine; a policy's [tools.<upstream>__<tool>] tables
        name its tools before the upstreams have listed them."""
        if policy is not None:
            self.engine.expect(policy.tools)
        registry.register(self.engine)

    def watching(self, notifier: Notifier) -> Notifier:
        """`notifier`, with the gateway's waiting calls woken by their runs' events."""
        self._watch = RunWatch(notifier)
        return self._watch

    def mount(self, app: web.Application) -> None:
        """`/mcp` on `app`, before it listens: served once the gateway is `running`,
        503 before and after."""
        from bot.mcp.http import MCP_PATH

        app.router.add_route("*", MCP_PATH, self._handle)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        if self._endpoint is None:
            return web.json_response({"error": "starting"}, status=503)
        return await self._endpoint.handle(request)

    @contextlib.asynccontextmanager
    async def running(self, service: ApprovalService) -> AsyncIterator[McpEndpoint]:
        """Connect the upstreams and serve `/mcp` (where `mount` put it) for the
        block; yields the endpoint (bot.mcp.http)."""
        from bot.mcp.http import McpEndpoint
        from bot.mcp.server import Transport

        if self._watch is None:
            raise ConfigError("the MCP gateway's run watch was not put in front of the notifier")
        desk = McpCalls(
            service,
            watch=self._watch,
            retry_window=self.config.retry_window,
            max_waiting=self.config.max_waiting,
        )
        gateway = Gateway(
            config=self.config, upstreams=self.upstreams, desk=desk, metrics=self.metrics
        )
        transport = Transport(gateway)
        owner = TaskOwner(logger=log)
        try:
            await self.upstreams.start(owner, within=CONNECT_SECONDS)
            async with transport.running():
                self._gateway = gateway
                self._endpoint = McpEndpoint(transport, self.config, self.metrics)
                yield self._endpoint
        finally:
            self._gateway = None
            self._endpoint = None
            await self.upstreams.aclose()
            await owner.aclose(timeout=5.0)

    def stop_waiting(self) -> None:
        """Shutting down: waiting calls answer now ("still pending") instead of later."""
        if self._gateway is not None:
            self._gateway.stop_waiting()

    def readiness(self) -> dict[str, Any]:
        """What `/readyz` says of the gateway: each upstream, up or down (and why)."""
        return {
            "upstreams": {
                name: {"up": health.up, "detail": health.detail, "tools": health.tools}
                for name, health in self.upstreams.health().items()
            }
        }

    def describe(self) -> str:
        health = self.upstreams.health()
        parts = [f"{name} {'up' if h.up else 'down'}" for name, h in sorted(health.items())]
        return f"upstreams: {', '.join(parts)}; clients: {', '.join(sorted(self.config.clients))}"
