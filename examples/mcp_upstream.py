"""An offline MCP server to put the gateway in front of: an "ops" upstream over stdio,
which the gateway starts as a child:

    approvals-bot mcp check examples/mcp.toml
    APPROVALS_MCP=examples/mcp.toml approvals-bot serve

Its tools do nothing real: each call appends one JSON line to OPS_MCP_EFFECTS (default
./mcp-effects.jsonl), so you can see what ran, and how often. It annotates its tools the
way MCP servers do: `service_status` is read-only (the example's file lets such tools
pass straight through), `deploy_release` is destructive; the others say nothing, so they
need approval too. Written with the official MCP SDK (from a checkout:
`pip install -e '.[mcp]'`).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("ops", instructions="Operations tools of the example ops team.")


def _effect(tool: str, **arguments: Any) -> str:
    line = {"at": datetime.now(UTC).isoformat(), "tool": tool, "arguments": arguments}
    path = Path(os.environ.get("OPS_MCP_EFFECTS", "mcp-effects.jsonl"))
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")
    return f"{tool}: done ({json.dumps(arguments, sort_keys=True)})"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def service_status(service: str) -> str:
    """Report a service's running version and health."""
    return f"{service}: version 1.2.3, healthy"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def deploy_release(service: str, version: str) -> str:
    """Deploy a version of a service to production."""
    return _effect("deploy_release", service=service, version=version)


@server.tool()
def restart_service(service: str) -> str:
    """Restart every instance of a service."""
    return _effect("restart_service", service=service)


@server.tool()
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email from the ops team's address."""
    return _effect("send_email", to=to, subject=subject, body=body)


if __name__ == "__main__":
    server.run("stdio")
