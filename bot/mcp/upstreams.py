"""The gateway's connections to its upstream MCP servers (the MCP SDK's client).

Each upstream has one connection, opened and closed by one task (the SDK's transports
are anyio contexts, entered and left in the same task) that the gateway's task owner
keeps: it connects (stdio: starts the command with only the environment the file names;
Streamable HTTP: with the headers it names), lists the tools, and then every
REFRESH_SECONDS lists them again, which also proves the connection is alive. A lost
connection (a call or a listing answered "connection closed", a failed listing) is
reopened with backoff. Calls from any task go over the open connection.

What the gateway learns of a call's fate is kept apart: a call that could not be sent
(the upstream is down) is `UpstreamError(sent=False)`; one that timed out or lost its
connection after it was sent is `UpstreamError(sent=True)`, its effect unknown; an
upstream that answered with a protocol error or a malformed result has answered, and the
caller gets an error result saying so. A result over `max_result_bytes` is not relayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import mcp_types as types
import orjson
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from bot.credentials import redact_text
from bot.errors import UpstreamError
from bot.mcp.calls import text_result
from bot.mcp.catalog import ListedTool, read_listing
from bot.mcp.config import GatewayConfig, HttpTransport, StdioTransport, UpstreamConfig
from bot.mcp.telemetry import McpMetrics

log = logging.getLogger(__name__)

REFRESH_SECONDS = 30.0
LIST_TIMEOUT_SECONDS = 10.0
MAX_LIST_PAGES = 20
FIRST_BACKOFF_SECONDS = 0.5
LONGEST_BACKOFF_SECONDS = 30.0
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


class Spawner(Protocol):
    """Whoever owns the gateway's background tasks (the bot's TaskOwner)."""

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]: ...


@dataclass(frozen=True, kw_only=True)
class Health:
    """An upstream as `/readyz` reports it: up, or down and why (never a secret)."""

    up: bool
    detail: str
    tools: int


class Upstream:
    """One upstream (see the module doc)."""

    def __init__(
        self,
        config: UpstreamConfig,
        *,
        environ: Mapping[str, str],
        metrics: McpMetrics,
        max_result_bytes: int,
    ) -> None:
        self.config = config
        self._environ = environ
        self._metrics = metrics
        self._max_result_bytes = max_result_bytes
        self._client: Client | None = None
        self._tools: dict[str, ListedTool] = {}
        self._problems: list[str] = []
        self._detail = "connecting"
        self._wake = asyncio.Event()
        self._closing = False
        self._lost = False
        self.tried = asyncio.Event()  # set once the first connection attempt ended

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def tools(self) -> Mapping[str, ListedTool]:
        return self._tools

    def health(self) -> Health:
        up = self._client is not None
        return Health(up=up, detail="up" if up else self._detail, tools=len(self._tools))

    # -- the connection ------------------------------------------------------------------

    async def run(self) -> None:
        """Keep the connection open until `close` (the owner's task)."""
        backoff = FIRST_BACKOFF_SECONDS
        while not self._closing:
            try:
                async with self._open() as client:
                    await self._list(client)
                    self._connected(client)
                    backoff = FIRST_BACKOFF_SECONDS
                    await self._serve(client)
            except Exception as error:
                self._disconnected(_describe(error))
            else:
                self._disconnected("connection lost")
            if self.closing:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), backoff)
            self._wake.clear()
            backoff = min(backoff * 2, LONGEST_BACKOFF_SECONDS)

    @property
    def closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True
        self._wake.set()

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[Client]:
        transport = self.config.transport
        async with contextlib.AsyncExitStack() as stack:
            if isinstance(transport, StdioTransport):
                server: Any = self._stdio(transport)
            else:
                http = await stack.enter_async_context(
                    create_mcp_http_client(headers=self._headers(transport))
                )
                server = streamable_http_client(transport.url, http_client=http)
            client = Client(server, cache=None, message_handler=self._on_message)
            yield await stack.enter_async_context(client)

    def _stdio(self, transport: StdioTransport) -> StdioServerParameters:
        env = {name: self._variable(source) for name, source in transport.env.items()}
        return StdioServerParameters(
            command=transport.command, args=list(transport.args), env=env, cwd=transport.cwd
        )

    def _headers(self, transport: HttpTransport) -> dict[str, str]:
        return {name: self._variable(source) for name, source in transport.headers.items()}

    def _variable(self, name: str) -> str:
        value = self._environ.get(name)
        if not value:
            raise _Unconfigured(f"environment variable {name} is not set")
        return value

    async def _serve(self, client: Client) -> None:
        """Until closing or lost: list the tools again every REFRESH_SECONDS (or sooner,
        when the upstream says its list changed)."""
        while not self._interrupted():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), REFRESH_SECONDS)
            self._wake.clear()
            if self._interrupted():
                return
            await self._list(client)

    def _interrupted(self) -> bool:
        return self._closing or self._lost

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._wake.set()  # the serving loop lists again

    def _connected(self, client: Client) -> None:
        self._client = client
        self._lost = False
        self._detail = "up"
        self._metrics.health(self.name, up=True)
        self.tried.set()
        log.info("mcp upstream %s: connected, %d tools", self.name, len(self._tools))

    def _disconnected(self, why: str) -> None:
        detail = f"down: {why}"
        if self._closing:
            detail = "closed"
        elif detail != self._detail:  # said once per change, not at every retry
            log.warning("mcp upstream %s: %s", self.name, detail)
        self._client = None
        self._tools = {}  # a down upstream's tools are not offered (its calls would fail)
        self._detail = detail
        self._metrics.health(self.name, up=False)
        self.tried.set()

    def _lose(self) -> None:
        """The connection answered "closed": reopen it."""
        self._lost = True
        self._wake.set()

    # -- tools -------------------------------------------------------------------------------

    async def _list(self, client: Client) -> dict[str, ListedTool]:
        raw: list[dict[str, Any]] = []
        cursor: str | None = None
        with anyio.fail_after(LIST_TIMEOUT_SECONDS):
            for _ in range(MAX_LIST_PAGES):
                page = await client.list_tools(cursor=cursor)
                raw += [
                    t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools
                ]
                cursor = page.next_cursor
                if not cursor:
                    break
        tools, problems = read_listing(self.config, raw)
        if problems != self._problems:
            for problem in problems:
                log.warning("mcp upstream %s: not exposed: %s", self.name, redact_text(problem))
            self._problems = problems
        self._tools = tools
        return tools

    async def fresh_definition(self, tool: str) -> ListedTool | None:
        client = self._require()
        try:
            tools = await self._list(client)
        except Exception as error:
            self._failed(error)
            raise UpstreamError(
                f"listing its tools failed: {_describe(error)}", sent=False
            ) from None
        return tools.get(tool)

    # -- calls -------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        client = self._require()
        started = time.monotonic()
        timeout = self.config.timeout.total_seconds()
        try:
            result = await client.call_tool(tool, dict(arguments), read_timeout_seconds=timeout)
        except MCPError as error:
            return self._protocol_error(error, timeout)
        except ValidationError:
            self._metrics.upstream_error(self.name, "invalid")
            return text_result(
                f"Upstream {self.name} answered with a malformed result.", is_error=True
            )
        except Exception as error:
            self._failed(error)
            raise UpstreamError(f"the call failed: {_describe(error)}", sent=True) from None
        finally:
            self._metrics.answered_in(self.name, time.monotonic() - started)
        return self._bounded(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    def _protocol_error(self, error: MCPError, timeout: float) -> dict[str, Any]:
        if error.code == types.CONNECTION_CLOSED:
            self._metrics.upstream_error(self.name, "connection_lost")
            self._lose()
            raise UpstreamError("the connection closed during the call", sent=True) from None
        if error.code == types.REQUEST_TIMEOUT:
            self._metrics.upstream_error(self.name, "timeout")
            raise UpstreamError(f"no answer within {timeout:g}s", sent=True) from None
        self._metrics.upstream_error(self.name, "refused")
        message = redact_text(str(error))[:500]
        return text_result(
            f"Upstream {self.name} refused the call ({error.code}): {message}", is_error=True
        )

    def _bounded(self, result: dict[str, Any]) -> dict[str, Any]:
        """The result as the client gets it: without the upstream's protocol stamps, and
        only if it fits `max_result_bytes`."""
        result.pop("resultType", None)
        meta = result.get("_meta")
        if isinstance(meta, dict):
            meta.pop(SERVER_INFO_KEY, None)
            if not meta:
                result.pop("_meta")
        size = len(orjson.dumps(result))
        if size <= self._max_result_bytes:
            return result
        self._metrics.upstream_error(self.name, "too_large")
        return text_result(
            f"The call ran on upstream {self.name}, but its result ({size} bytes) is over the "
            f"gateway's limit of {self._max_result_bytes} bytes, so it was not relayed.",
            is_error=True,
        )

    def _require(self) -> Client:
        client = self._client
        if client is None:
            self._metrics.upstream_error(self.name, "unreachable")
            raise UpstreamError(f"upstream {self.name} is {self._detail}", sent=False)
        return client

    def _failed(self, error: BaseException) -> None:
        if isinstance(error, MCPError) and error.code != types.CONNECTION_CLOSED:
            return
        self._metrics.upstream_error(self.name, "connection_lost")
        self._lose()


class Upstreams:
    """Every upstream of the gateway's file (the engine's `UpstreamSource`)."""

    def __init__(
        self,
        config: GatewayConfig,
        *,
        environ: Mapping[str, str] | None = None,
        metrics: McpMetrics | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self._metrics = metrics or McpMetrics(None)
        self._by_name = {
            name: Upstream(
                upstream,
                environ=env,
                metrics=self._metrics,
                max_result_bytes=config.max_result_bytes,
            )
            for name, upstream in config.upstreams.items()
        }
        self._config = config
        self._tasks: list[asyncio.Task[Any]] = []

    async def start(self, owner: Spawner, *, within: float) -> None:
        """Connect every upstream in a task of `owner`; return once each has connected or
        failed once, or after `within` seconds (the rest keep trying)."""
        for upstream in self._by_name.values():
            self._tasks.append(owner.spawn(upstream.run(), name=f"mcp-upstream:{upstream.name}"))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                for upstream in self._by_name.values():
                    await upstream.tried.wait()

    async def aclose(self) -> None:
        """Close every connection (stdio upstreams are stopped) and wait for their tasks."""
        for upstream in self._by_name.values():
            upstream.close()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def health(self) -> dict[str, Health]:
        return {name: upstream.health() for name, upstream in self._by_name.items()}

    def catalog(self) -> list[ListedTool]:
        """Every tool of every upstream as last listed, in a stable order."""
        return [
            tool
            for upstream in self._by_name.values()
            for _, tool in sorted(upstream.tools.items())
        ]

    def listed(self, exposed: str) -> ListedTool | None:
        found = self._config.upstream_of(exposed)
        if found is None:
            return None
        upstream, tool = found
        return self._by_name[upstream.name].tools.get(tool)

    def exposed_names(self) -> list[str]:
        return [tool.exposed for tool in self.catalog()]

    async def fresh_definition(self, upstream: str, tool: str) -> ListedTool | None:
        return await self._by_name[upstream].fresh_definition(tool)

    async def call(self, upstream: str, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return await self._by_name[upstream].call(tool, arguments)


class _Unconfigured(Exception):
    """An upstream cannot be started as configured (a variable it names is not set)."""


def _describe(error: BaseException) -> str:
    """One line for the log and `/readyz`: the error's kind and message, redacted."""
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        return _describe(error.exceptions[0])
    if isinstance(error, _Unconfigured):
        return str(error)
    text = redact_text(str(error))[:200]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
