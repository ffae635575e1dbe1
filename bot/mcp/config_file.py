"""Reading the gateway's file (its format and records: bot.mcp.config), every problem
collected and reported at once, each naming its key; and which environment variables it
names are not set."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bot.errors import ConfigError
from bot.mcp.config import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_WAITING,
    DEFAULT_PROGRESS_EVERY,
    DEFAULT_RETRY_WINDOW,
    DEFAULT_TIMEOUT,
    DEFAULT_WAIT,
    ENV_NAME,
    HEADER_NAME,
    LONGEST_WAIT,
    MCP_ENV,
    NAME,
    SLACK_CHANNEL_ID,
    TOOL_NAME,
    ClientConfig,
    GatewayConfig,
    HttpTransport,
    McpConfigError,
    NeedsApproval,
    StdioTransport,
    UpstreamConfig,
)
from bot.mcp.tokens import TOKEN_DIGEST
from bot.policy.durations import parse_duration
from bot.policy.rules import SLACK_USER_ID

GATEWAY_KEYS = frozenset(
    {"wait", "progress_every", "retry_window", "max_result_bytes", "max_waiting"}
)
UPSTREAM_KEYS = frozenset(
    {"command", "args", "env", "cwd", "url", "headers", "needs_approval", "timeout", "replay"}
)
CLIENT_KEYS = frozenset({"token_digest", "token_digests", "channel", "user"})
TOP_KEYS = frozenset({"gateway", "upstreams", "clients"})


def load_gateway_config(path: str) -> GatewayConfig:
    """The gateway file at `path` (McpConfigError naming every problem)."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"MCP gateway file {path}: cannot read it ({error.strerror})") from None
    return parse_gateway_config(text, source=str(file))


def parse_gateway_config(text: str, *, source: str = "<mcp>") -> GatewayConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise McpConfigError(source, [f"not valid TOML: {error}"]) from None
    return _Parser(source).config(data)


def missing_environment(config: GatewayConfig, environ: Mapping[str, str]) -> list[str]:
    """One line per environment variable an upstream names that is not set."""
    return [
        f"upstreams.{upstream.name}: environment variable {name} is not set"
        for upstream in config.upstreams.values()
        for name in upstream.environment_names()
        if not environ.get(name)
    ]


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[str] = []

    def config(self, data: Mapping[str, Any]) -> GatewayConfig:
        self._unknown(data, TOP_KEYS, "")
        gateway = self._table(data.get("gateway", {}), "gateway")
        self._unknown(gateway, GATEWAY_KEYS, "gateway.")
        upstreams = {
            name: upstream
            for name, table in self._table(data.get("upstreams", {}), "upstreams").items()
            if (upstream := self._upstream(name, table)) is not None
        }
        clients = {
            name: client
            for name, table in self._table(data.get("clients", {}), "clients").items()
            if (client := self._client(name, table)) is not None
        }
        if not upstreams and "upstreams" not in data:
            self.problems.append("upstreams: name at least one upstream MCP server")
        if not clients and "clients" not in data:
            self.problems.append("clients: name at least one client (approvals-bot mcp token)")
        self._shared_tokens(clients)
        config = GatewayConfig(
            source=self.source,
            upstreams=upstreams,
            clients=clients,
            wait=self._duration(gateway, "wait", DEFAULT_WAIT, "gateway.", LONGEST_WAIT),
            progress_every=self._duration(
                gateway, "progress_every", DEFAULT_PROGRESS_EVERY, "gateway.", LONGEST_WAIT
            ),
            retry_window=self._duration(
                gateway, "retry_window", DEFAULT_RETRY_WINDOW, "gateway.", timedelta(days=7)
            ),
            max_result_bytes=self._size(gateway),
            max_waiting=self._count(gateway, "max_waiting", DEFAULT_MAX_WAITING, 1000),
        )
        if self.problems:
            raise McpConfigError(self.source, self.problems)
        return config

    # -- upstreams -----------------------------------------------------------------------

    def _upstream(self, name: str, table: Any) -> UpstreamConfig | None:
        key = f"upstreams.{name}"
        named = self._name(key, name, "an upstream's name; it prefixes its tools' names")
        if not self._is_table(key, table):
            return None
        self._unknown(table, UPSTREAM_KEYS, f"{key}.")
        transport = self._transport(key, table)
        needs = self._needs_approval(key, table.get("needs_approval", "all"))
        timeout = self._duration(table, "timeout", DEFAULT_TIMEOUT, f"{key}.", LONGEST_WAIT)
        replay = table.get("replay", "manual")
        if replay not in ("manual", "safe"):
            self.problems.append(
                f"{key}.replay: {replay!r} is not 'manual' (an interrupted call waits for a "
                "person) or 'safe' (it may run again)"
            )
            replay = "manual"
        if transport is None or needs is None or not named:
            return None
        return UpstreamConfig(
            name=name, transport=transport, needs_approval=needs, timeout=timeout, replay=replay
        )

    def _transport(
        self, key: str, table: Mapping[str, Any]
    ) -> StdioTransport | HttpTransport | None:
        has_command, has_url = "command" in table, "url" in table
        if has_command == has_url:
            self.problems.append(
                f"{key}: give either command (a stdio server) or url (Streamable HTTP)"
            )
            return None
        if has_url:
            for stdio_key in ("args", "env", "cwd"):
                if stdio_key in table:
                    self.problems.append(f"{key}.{stdio_key}: only for a stdio upstream")
            return self._http(key, table)
        if "headers" in table:
            self.problems.append(f"{key}.headers: only for a Streamable HTTP upstream")
        return self._stdio(key, table)

    def _stdio(self, key: str, table: Mapping[str, Any]) -> StdioTransport | None:
        command = table["command"]
        args = table.get("args", [])
        cwd = table.get("cwd")
        ok = True
        if not isinstance(command, str) or not command.strip():
            self.problems.append(f"{key}.command: must be a non-empty string")
            ok = False
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            self.problems.append(f"{key}.args: must be a list of strings")
            ok = False
        if cwd is not None and not isinstance(cwd, str):
            self.problems.append(f"{key}.cwd: must be a string")
            ok = False
        env = self._env_names(f"{key}.env", table.get("env", {}), ENV_NAME, "variable")
        if not ok or env is None:
            return None
        return StdioTransport(command=command, args=tuple(args), env=env, cwd=cwd)

    def _http(self, key: str, table: Mapping[str, Any]) -> HttpTransport | None:
        url = table["url"]
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            self.problems.append(f"{key}.url: must be an http:// or https:// URL")
            return None
        if parts.username or parts.password:
            self.problems.append(
                f"{key}.url: holds credentials; put them in a header read from the "
                'environment (headers = {{ Authorization = "VARIABLE" }})'
            )
            return None
        headers = self._env_names(f"{key}.headers", table.get("headers", {}), HEADER_NAME, "header")
        if headers is None:
            return None
        return HttpTransport(url=url, headers=headers)

    def _env_names(
        self, key: str, value: Any, pattern: re.Pattern[str], what: str
    ) -> dict[str, str] | None:
        if isinstance(value, list) and all(isinstance(name, str) for name in value):
            value = {name: name for name in value}  # a list of names: each passed as is
        if not isinstance(value, dict):
            self.problems.append(f'{key}: must be a table of {what} = "ENVIRONMENT_VARIABLE"')
            return None
        names: dict[str, str] = {}
        for target, source in value.items():
            if not pattern.fullmatch(target):
                self.problems.append(f"{key}.{target}: not a valid {what} name")
            elif not isinstance(source, str) or not ENV_NAME.fullmatch(source):
                self.problems.append(
                    f"{key}.{target}: must name an environment variable of the bot's (its "
                    "value is read from there, so no secret sits in this file)"
                )
            else:
                names[target] = source
        return names

    def _needs_approval(self, key: str, value: Any) -> NeedsApproval | None:
        if value in ("all", "unless_read_only"):
            return value  # type: ignore[no-any-return]
        if isinstance(value, list) and all(isinstance(name, str) for name in value):
            bad = [name for name in value if not TOOL_NAME.fullmatch(name)]
            if bad:
                self.problems.append(f"{key}.needs_approval: {bad} are not tool names")
                return None
            return frozenset(value)
        self.problems.append(
            f'{key}.needs_approval: must be "all", "unless_read_only" or a list of the '
            "upstream's tool names"
        )
        return None

    # -- clients -------------------------------------------------------------------------

    def _client(self, name: str, table: Any) -> ClientConfig | None:
        key = f"clients.{name}"
        named = self._name(key, name, "a client's name")
        if not self._is_table(key, table):
            return None
        self._unknown(table, CLIENT_KEYS, f"{key}.")
        digests = self._digests(key, table)
        channel, user = table.get("channel"), table.get("user")
        ok = digests is not None and named
        if not isinstance(channel, str) or not SLACK_CHANNEL_ID.fullmatch(channel):
            self.problems.append(f"{key}.channel: a Slack channel id (C…), where its cards go")
            ok = False
        if not isinstance(user, str) or not SLACK_USER_ID.fullmatch(user):
            self.problems.append(
                f"{key}.user: the Slack user id (U… or W…) it acts for; that person "
                "cannot approve its calls (unless the policy allows self approval)"
            )
            ok = False
        if not ok or digests is None:
            return None
        assert isinstance(channel, str)
        assert isinstance(user, str)
        return ClientConfig(name=name, token_digests=digests, channel=channel, user=user)

    def _digests(self, key: str, table: Mapping[str, Any]) -> tuple[str, ...] | None:
        single, several = table.get("token_digest"), table.get("token_digests")
        if (single is None) == (several is None):
            self.problems.append(
                f"{key}: give token_digest (or token_digests, a list while a token is "
                f"replaced): run `approvals-bot mcp token <name>`"
            )
            return None
        values = [single] if single is not None else several
        if not isinstance(values, list) or not values:
            self.problems.append(f"{key}.token_digests: must be a non-empty list")
            return None
        bad = [v for v in values if not isinstance(v, str) or not TOKEN_DIGEST.fullmatch(v)]
        if bad:
            self.problems.append(
                f"{key}: a token digest reads sha256:<64 hex> (from `approvals-bot mcp "
                "token`); never put the token itself in this file"
            )
            return None
        return tuple(values)

    def _shared_tokens(self, clients: Mapping[str, ClientConfig]) -> None:
        owners: dict[str, str] = {}
        for client in clients.values():
            for digest in client.token_digests:
                other = owners.setdefault(digest, client.name)
                if other != client.name:
                    self.problems.append(
                        f"clients.{client.name}: shares a token with clients.{other}; "
                        "each client needs its own"
                    )

    # -- values --------------------------------------------------------------------------

    def _name(self, key: str, name: str, what: str) -> bool:
        if NAME.fullmatch(name):
            return True
        self.problems.append(
            f"{key}: {what}: lowercase letters, digits and '-', at most 31, starting with a letter"
        )
        return False

    def _is_table(self, key: str, value: Any) -> bool:
        if isinstance(value, dict):
            return True
        self.problems.append(f"{key}: must be a table")
        return False

    def _duration(
        self,
        table: Mapping[str, Any],
        name: str,
        default: timedelta,
        prefix: str,
        longest: timedelta,
    ) -> timedelta:
        if name not in table:
            return default
        try:
            return parse_duration(table[name], longest=longest)
        except ValueError as error:
            self.problems.append(f"{prefix}{name}: {error}")
            return default

    def _size(self, gateway: Mapping[str, Any]) -> int:
        value = gateway.get("max_result_bytes", DEFAULT_MAX_RESULT_BYTES)
        if type(value) is not int or not 1024 <= value <= 64 * 1024 * 1024:
            self.problems.append(
                "gateway.max_result_bytes: a whole number of bytes, 1024 to 64 MiB"
            )
            return DEFAULT_MAX_RESULT_BYTES
        return value

    def _count(self, table: Mapping[str, Any], name: str, default: int, most: int) -> int:
        value = table.get(name, default)
        if type(value) is not int or not 1 <= value <= most:
            self.problems.append(f"gateway.{name}: a whole number from 1 to {most}")
            return default
        return value

    def _table(self, value: Any, key: str) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        self.problems.append(f"{key}: must be a table")
        return {}

    def _unknown(self, table: Mapping[str, Any], known: frozenset[str], prefix: str) -> None:
        for name in sorted(set(table) - known):
            self.problems.append(f"{prefix}{name}: unknown key (known: {', '.join(sorted(known))})")


def gateway_tools_in(policy_file: str, config: GatewayConfig) -> list[str]:
    """The names the policy file gives the gateway's tools: its upstreams list their
    tools only once they run, so any `<upstream>__<tool>` of an upstream `config` names.
    (A file that cannot be read names none; reading it as a policy says why.)"""
    try:
        tables = tomllib.loads(Path(policy_file).read_text(encoding="utf-8")).get("tools")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    named = tables if isinstance(tables, dict) else {}
    return sorted(name for name in named if config.upstream_of(name) is not None)


def gateway_tools_named(policy_file: str, environ: Mapping[str, str]) -> list[str]:
    """The gateway's tools `policy_file` has tables for, when `APPROVALS_MCP` (in
    `environ`) names a gateway file (ConfigError when that file has problems)."""
    path = environ.get(MCP_ENV, "").strip()
    return gateway_tools_in(policy_file, load_gateway_config(path)) if path else []
