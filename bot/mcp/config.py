"""The gateway's file: the upstream MCP servers it fronts and the clients that may call it.

TOML, named by `APPROVALS_MCP` (docs/mcp.md has the whole format; examples/mcp.toml is
one that works offline):

    [gateway]                      # all optional
    wait = "50s"                   # how long a gated call's request waits for a decision
    progress_every = "5s"          # a progress notification this often while it waits
    retry_window = "1h"            # a finished call's result still answers its retry
    max_result_bytes = 1048576     # an upstream result past this is not relayed
    max_waiting = 20               # a client's calls waiting for people at once

    [upstreams.ops]                # exposed to clients as ops__<tool>
    command = "python3"            # stdio: the command, its args, its environment...
    args = ["examples/mcp_upstream.py"]
    env = { OPS_TOKEN = "OPS_TOKEN" }   # ...each value NAMES one of ours: no secret here
    needs_approval = "unless_read_only" # "all" (default) | "unless_read_only" | [tools]
    timeout = "60s"                # one call upstream; past it the outcome is uncertain
    replay = "manual"              # an interrupted call: "manual" (default) | "safe"

    [upstreams.docs]
    url = "https://mcp.example.com/mcp"            # Streamable HTTP...
    headers = { Authorization = "DOCS_MCP_AUTH" }  # ...header values from our environment

    [clients.claude-desktop]
    token_digest = "sha256:…"     # `approvals-bot mcp token claude-desktop` prints both
    channel = "C0123OPS"          # where its calls' cards go
    user = "U0123ALICE"           # whom it acts for: the requester of its calls

Here: the records the file becomes. Reading it (bot.mcp.config_file) collects and reports
every problem at once (McpConfigError), each naming its key. Nothing secret is read from
the file: environment variables are named and read when an upstream is started
(`missing_environment` lists those not set).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from bot.errors import ConfigFileError

MCP_ENV = "APPROVALS_MCP"
DEFAULT_WAIT = timedelta(seconds=50)
DEFAULT_PROGRESS_EVERY = timedelta(seconds=5)
DEFAULT_RETRY_WINDOW = timedelta(hours=1)
DEFAULT_TIMEOUT = timedelta(seconds=60)
DEFAULT_MAX_RESULT_BYTES = 1024 * 1024
DEFAULT_MAX_WAITING = 20
LONGEST_WAIT = timedelta(minutes=30)
NAME = re.compile(r"[a-z][a-z0-9-]{0,30}")  # no "_": the exposed name splits at "__"
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,64}")
SLACK_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,30}")
SEPARATOR = "__"

NeedsApproval = Literal["all", "unless_read_only"] | frozenset[str]
Replay = Literal["manual", "safe"]


@dataclass(frozen=True, kw_only=True)
class StdioTransport:
    """An upstream the gateway starts as a child process and talks to on its stdin and
    stdout. `env`: the child's variable -> the name of ours it takes its value from."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None


@dataclass(frozen=True, kw_only=True)
class HttpTransport:
    """An upstream reached over Streamable HTTP. `headers`: header -> the name of our
    environment variable holding its value."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class UpstreamConfig:
    name: str
    transport: StdioTransport | HttpTransport
    needs_approval: NeedsApproval = "all"
    timeout: timedelta = DEFAULT_TIMEOUT
    replay: Replay = "manual"

    def exposed(self, tool: str) -> str:
        """The name clients see for the upstream's tool: `<upstream>__<tool>`."""
        return f"{self.name}{SEPARATOR}{tool}"

    def environment_names(self) -> list[str]:
        """The variables of ours this upstream needs."""
        if isinstance(self.transport, StdioTransport):
            return sorted(set(self.transport.env.values()))
        return sorted(set(self.transport.headers.values()))


@dataclass(frozen=True, kw_only=True)
class ClientConfig:
    """An MCP client: known by its bearer token (only digests are stored), its calls'
    cards go to `channel`, and it acts for the Slack user `user` (their requester)."""

    name: str
    token_digests: tuple[str, ...]
    channel: str
    user: str


@dataclass(frozen=True, kw_only=True)
class GatewayConfig:
    source: str
    upstreams: Mapping[str, UpstreamConfig]
    clients: Mapping[str, ClientConfig]
    wait: timedelta = DEFAULT_WAIT
    progress_every: timedelta = DEFAULT_PROGRESS_EVERY
    retry_window: timedelta = DEFAULT_RETRY_WINDOW
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    max_waiting: int = DEFAULT_MAX_WAITING

    def upstream_of(self, exposed: str) -> tuple[UpstreamConfig, str] | None:
        """The upstream and its own tool name behind an exposed name (None: not ours)."""
        name, separator, tool = exposed.partition(SEPARATOR)
        upstream = self.upstreams.get(name)
        if not separator or upstream is None or not tool:
            return None
        return upstream, tool


class McpConfigError(ConfigFileError):
    """A gateway file with problems: all of them, each naming its key."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__("MCP gateway file", source, problems)
