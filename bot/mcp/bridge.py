"""`approvals-bot mcp bridge URL`: the gateway for clients that only start MCP servers as
commands (stdio), such as Claude Desktop.

The bridge is an MCP server on its own stdin and stdout that forwards `tools/list` and
`tools/call` to the gateway's `/mcp` over Streamable HTTP, with the client's token
(`APPROVALS_MCP_TOKEN`, never an argument: command lines are visible to every user of
the machine). While a gated call waits, the gateway's progress notifications are passed
on; a gateway on the 2026 protocol asking the bridge to call again (`input_required`)
is answered by the bridge itself, so the client simply sees one long call with
progress, and at the end either the result or the "still pending" message.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client

from bot.errors import ConfigError

TOKEN_ENV = "APPROVALS_MCP_TOKEN"

log = logging.getLogger(__name__)


def bridge_token(environ: Mapping[str, str]) -> str:
    token = environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ConfigError(
            f"set {TOKEN_ENV} to the client's token (from `approvals-bot mcp token NAME`)"
        )
    return token


async def run_bridge(url: str, token: str) -> None:
    """Serve stdin/stdout, forwarding to the gateway at `url`, until stdin closes."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        Client(streamable_http_client(url, http_client=http), cache=None) as gateway,
    ):
        server = bridge_server(gateway)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def bridge_server(gateway: Client) -> Server[Any]:
    """A server whose tools are the gateway's."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await gateway.list_tools(cursor=params.cursor if params else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        async def progress(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        return await gateway.call_tool(
            params.name, dict(params.arguments or {}), progress_callback=progress
        )

    return Server(
        "approvals-bot-bridge",
        instructions=gateway.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
