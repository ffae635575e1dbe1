"""`approvals-bot mcp check FILE | token NAME | bridge URL`: the MCP gateway's commands.

- `check` reads a gateway file and reports every problem at once (exit 2), else what it
  sets up: each upstream, how it is reached, which of its tools need approval, each
  client and where its cards go, and which environment variables it names are not set
  here (set them where the bot runs);
- `token` prints a new client token (give it to the client, once) and the digest line
  for the file (the file keeps only the digest);
- `bridge` serves the gateway to a client that starts MCP servers as commands (stdio in,
  Streamable HTTP out), with the token from APPROVALS_MCP_TOKEN.

The MCP SDK (the `mcp` extra) is needed by `bridge` only, and imported there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from bot.errors import InputError
from bot.mcp.config import (
    NAME,
    GatewayConfig,
    HttpTransport,
    StdioTransport,
    UpstreamConfig,
)
from bot.mcp.config_file import load_gateway_config, missing_environment
from bot.mcp.tokens import new_token, token_digest
from bot.policy.durations import format_duration


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="the MCP approval gateway: check its file, make client tokens, bridge stdio",
        description="The MCP approval gateway (docs/mcp.md).",
    )
    group = parser.add_subparsers(dest="mcp_command", metavar="COMMAND")
    check = group.add_parser(
        "check",
        help="report every problem of a gateway file at once",
        description="Read an MCP gateway file (the one APPROVALS_MCP names) and report "
        "every problem at once, or what it sets up.",
    )
    check.add_argument("file", metavar="FILE", help="the gateway's TOML file")
    check.set_defaults(func=mcp_check)
    token = group.add_parser(
        "token",
        help="make a token for an MCP client",
        description="Print a new token for the client NAME and the line that goes into "
        "its [clients.NAME] table (the file keeps only the token's digest).",
    )
    token.add_argument("name", metavar="NAME", help="the client's name in the gateway file")
    token.set_defaults(func=mcp_token)
    bridge = group.add_parser(
        "bridge",
        help="serve the gateway on stdin/stdout (for clients that start MCP commands)",
        description="Serve the gateway at URL (http://HOST:PORT/mcp) to an MCP client on "
        "stdin and stdout, with the client's token from APPROVALS_MCP_TOKEN.",
    )
    bridge.add_argument("url", metavar="URL", help="the gateway's /mcp URL")
    bridge.set_defaults(func=mcp_bridge)
    parser.set_defaults(func=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def mcp_check(args: argparse.Namespace) -> int:
    config = load_gateway_config(args.file)  # McpConfigError: every problem
    print(render_config(config, missing=missing_environment(config, os.environ)))
    return 0


def render_config(config: GatewayConfig, *, missing: list[str]) -> str:
    lines = [
        f"MCP gateway file {config.source}: OK",
        f"gateway: a gated call waits {format_duration(config.wait)} (progress every "
        f"{format_duration(config.progress_every)}); a finished call answers its retry for "
        f"{format_duration(config.retry_window)}; results up to {config.max_result_bytes} bytes",
    ]
    lines += [_upstream_line(upstream) for _, upstream in sorted(config.upstreams.items())]
    lines += [
        f"clients.{name}: cards to {client.channel}, acting for {client.user} "
        f"({len(client.token_digests)} token(s))"
        for name, client in sorted(config.clients.items())
    ]
    lines += [f"not set here: {line}" for line in missing]
    return "\n".join(lines)


def _upstream_line(upstream: UpstreamConfig) -> str:
    transport = upstream.transport
    if isinstance(transport, StdioTransport):
        reached = f"stdio `{' '.join([transport.command, *transport.args])}`"
    else:
        assert isinstance(transport, HttpTransport)
        reached = f"Streamable HTTP {transport.url}"
    needs = upstream.needs_approval
    gated = (
        "every tool needs approval"
        if needs == "all"
        else "tools the upstream marks read-only pass straight through, the rest need approval"
        if needs == "unless_read_only"
        else f"{', '.join(sorted(needs))} (and any tool marked destructive) need approval"
    )
    return (
        f"upstreams.{upstream.name}: {reached}; {gated}; exposed as {upstream.name}__<tool>; "
        f"timeout {format_duration(upstream.timeout)}, replay {upstream.replay}"
    )


def mcp_token(args: argparse.Namespace) -> int:
    name = args.name
    if not NAME.fullmatch(name):
        raise InputError(
            f"{name!r} is not a client name: lowercase letters, digits and '-' (at most 31, "
            "starting with a letter)"
        )
    token = new_token()
    print(f"token for {name} (give it to the client once; it is not stored anywhere):")
    print(f"  {token}")
    print("add to the gateway file:")
    print(f"  [clients.{name}]")
    print(f'  token_digest = "{token_digest(token)}"')
    return 0


def mcp_bridge(args: argparse.Namespace) -> int:
    from bot.mcp.bridge import bridge_token, run_bridge

    asyncio.run(run_bridge(args.url, bridge_token(os.environ)))
    return 0
