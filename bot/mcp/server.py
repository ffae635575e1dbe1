"""The gateway's MCP server: the SDK's low-level `Server`, its two tool handlers, and the
Streamable HTTP transport that serves it at `/mcp` (bot.mcp.http mounts it).

The transport is stateless (no MCP session lives in one process): every request carries
its bearer token, so any replica answers any request, and a retry reaching another
replica finds its call through the database. Both protocol eras are served: the
initialize handshake (2025 and before) and the 2026 per-request envelope, where a call
still waiting when its time is up answers `input_required`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from importlib import metadata
from typing import Any

import mcp_types as types
import orjson
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from bot.errors import InputError
from bot.mcp.gateway import Caller, Gateway, WaitMore, rounds_left

CALLER_KEY = "approvals_bot.mcp_caller"
INSTRUCTIONS = (
    "approvals-bot, an approval gateway: some tools wait until a person approves the call "
    "in Slack. While a call waits you get progress notifications; if it is still waiting "
    "when its time is up, you are told which approval is pending, and calling the same "
    "tool again with the same arguments waits for the same decision (it is not asked "
    "again)."
)

log = logging.getLogger(__name__)


def build_server(gateway: Gateway) -> Server[Any]:
    """The low-level server answering `tools/list` and `tools/call` through `gateway`."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller_of(ctx)
        return types.ListToolsResult(tools=_tools(gateway))

    async def call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        caller = caller_of(ctx)
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

        async def report(progress: float, total: float, message: str) -> None:
            await ctx.session.report_progress(progress, total, message)

        try:
            answer = await gateway.call(
                caller,
                params.name,
                dict(params.arguments or {}),
                report=report,
                rounds_left=rounds_left(params.request_state) if modern else None,
            )
        except InputError as error:
            raise MCPError(code=types.INVALID_PARAMS, message=str(error)) from None
        if isinstance(answer, WaitMore):
            return types.InputRequiredResult(request_state=answer.request_state)
        return types.CallToolResult.model_validate(answer.result)

    return Server(
        "approvals-bot",
        version=metadata.version("approvals-bot"),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=gateway.input_schema,
    )


def caller_of(ctx: Any) -> Caller:
    """Who the HTTP layer authenticated this request as (its bearer token)."""
    request = getattr(ctx, "request", None)
    caller = request.scope.get(CALLER_KEY) if request is not None else None
    if not isinstance(caller, Caller):  # only bot.mcp.http serves this server
        raise MCPError(code=types.INVALID_REQUEST, message="not authenticated")
    return caller


def _tools(gateway: Gateway) -> list[types.Tool]:
    tools = []
    for listed in gateway.tools():
        try:
            tools.append(types.Tool.model_validate(listed))
        except ValidationError:  # the upstream's listing passed its client; not ours
            log.warning("mcp: not listing %s: not a valid MCP tool", listed.get("name"))
    return tools


class Transport:
    """The SDK's Streamable HTTP transport for `gateway`'s server: run it (`running()`, in
    the task that serves) and hand it each request (`app_for(body)`, an ASGI app).

    Two of the SDK's managers serve the same server, both stateless: one answers with a
    stream (SSE: progress notifications while a call waits for a person), the other with
    plain JSON, which costs the SDK less per request. A request goes to the streaming one
    only when it is a `tools/call` of a tool that waits for a person (or when its body
    cannot be read, where the SDK's own answer is the same either way)."""

    def __init__(self, gateway: Gateway) -> None:
        server = build_server(gateway)
        self._gateway = gateway
        self._streaming = StreamableHTTPSessionManager(app=server, stateless=True)
        self._plain = StreamableHTTPSessionManager(app=server, stateless=True, json_response=True)

    def app_for(self, body: bytes) -> Any:
        """The manager's ASGI app for a request with this body."""
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return self._streaming.handle_request
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return self._plain.handle_request
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if isinstance(name, str) and not self._gateway.may_wait(name):
            return self._plain.handle_request
        return self._streaming.handle_request

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self._streaming.run(), self._plain.run():
            yield
