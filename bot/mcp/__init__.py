"""The MCP approval gateway: approvals-bot in front of the MCP servers an agent calls.

An MCP server at `/mcp` (on the bot's own port) that lists every upstream server's tools
as `<upstream>__<tool>`, passes the calls its file lets pass straight through, and turns
every other call into a pending approval exactly like a native one: a run of agent
`mcp` whose card, policy, quorum, expiry, ledger and audit are the bot's own. See
docs/mcp.md.

SDK-free (importable without the `mcp` extra): config (the gateway's file), tokens
(client tokens, call keys), catalog (exposed names, which calls need approval, tool
definitions), calls (what the gateway and the service pass between them), schemas,
engine (each gated call as a run), gateway (answering one call), telemetry.
With the MCP SDK: upstreams (the connections to the upstream servers), server (the SDK
server and its transport), http (the `/mcp` route: tokens, then the SDK), asgi (the
SDK's transport on aiohttp), bridge (stdio in, Streamable HTTP out).
"""

from bot.mcp.calls import CallDesk, CallState, Finished, GatedCall, Waiting
from bot.mcp.config import MCP_ENV, GatewayConfig, McpConfigError
from bot.mcp.config_file import load_gateway_config
from bot.mcp.engine import McpEngine

__all__ = [
    "MCP_ENV",
    "CallDesk",
    "CallState",
    "Finished",
    "GatedCall",
    "GatewayConfig",
    "McpConfigError",
    "McpEngine",
    "Waiting",
    "load_gateway_config",
]
