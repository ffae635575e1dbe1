"""Slack surface configuration, read from the environment once at start-up.

Every problem becomes a ConfigError whose one line names the variable, so that
`approvals-bot serve` stops with something a person can act on.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from bot.errors import ConfigError

DEFAULT_SLACK_API_URL = "https://slack.com/api/"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3000

Mode = Literal["http", "socket"]
_HOST_NAME = re.compile(
    r"[A-Za-z0-9]([A-Za-z0-9\-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*"
)


@dataclass(frozen=True, kw_only=True)
class SlackSettings:
    """What the Slack surface needs to start. Secrets are kept out of `repr`. The key
    ring (APPROVALS_KEYS) is read and checked by the store when it opens."""

    bot_token: str
    signing_secret: str
    app_token: str | None
    api_url: str
    host: str
    port: int
    database_url: str | None  # None: the store's default (see store.config)
    agents: str | None

    def __repr__(self) -> str:
        return (
            f"SlackSettings(api_url={self.api_url!r}, host={self.host!r}, port={self.port}, "
            f"database_url={self.database_url!r}, agents={self.agents!r}, secrets=«redacted»)"
        )


def load_settings(env: Mapping[str, str], *, mode: Mode = "http") -> SlackSettings:
    """Read and check the Slack settings from `env` (usually `os.environ`)."""
    bot_token = _required_token(env, "SLACK_BOT_TOKEN", prefix="xoxb-")
    # Socket Mode delivers over a WebSocket the app opens with its app-level token;
    # Slack signs nothing there, so only HTTP mode needs the signing secret.
    signing_secret = (
        _required(env, "SLACK_SIGNING_SECRET")
        if mode == "http"
        else _optional(env, "SLACK_SIGNING_SECRET") or ""
    )
    app_token = (
        _required_token(env, "SLACK_APP_TOKEN", prefix="xapp-")
        if mode == "socket"
        else _optional(env, "SLACK_APP_TOKEN")
    )
    return SlackSettings(
        bot_token=bot_token,
        signing_secret=signing_secret,
        app_token=app_token,
        api_url=_api_url(env.get("SLACK_API_URL", "").strip() or DEFAULT_SLACK_API_URL),
        host=_host(env.get("HOST", "").strip() or DEFAULT_HOST),
        port=_port(env.get("PORT", "").strip() or str(DEFAULT_PORT)),
        database_url=_optional(env, "APPROVALS_DATABASE_URL"),
        agents=_agents_spec(_optional(env, "APPROVALS_AGENTS")),
    )


def web_api_from_env(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(bot token, Web API URL) when SLACK_BOT_TOKEN is set (operator commands then tell
    the run's Slack thread too), else None. A malformed value is a ConfigError."""
    if _optional(env, "SLACK_BOT_TOKEN") is None:
        return None
    token = _required_token(env, "SLACK_BOT_TOKEN", prefix="xoxb-")
    return token, _api_url(env.get("SLACK_API_URL", "").strip() or DEFAULT_SLACK_API_URL)


def _optional(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _required(env: Mapping[str, str], name: str) -> str:
    value = _optional(env, name)
    if value is None:
        raise ConfigError(f"{name} is not set")
    return value


def _required_token(env: Mapping[str, str], name: str, *, prefix: str) -> str:
    value = _required(env, name)
    if not value.startswith(prefix):
        raise ConfigError(f"{name} must start with {prefix!r} (got a value starting otherwise)")
    return value


def _api_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"SLACK_API_URL must be an http(s) URL, got {value!r}")
    return value if value.endswith("/") else value + "/"


def _host(value: str) -> str:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        if not _HOST_NAME.fullmatch(value):
            raise ConfigError(f"HOST must be an IP address or host name, got {value!r}") from None
    return value


def _port(value: str) -> int:
    if not value.isdigit() or not 0 <= int(value) <= 65535:
        raise ConfigError(f"PORT must be a number from 0 to 65535, got {value!r}")
    return int(value)


def _agents_spec(value: str | None) -> str | None:
    if value is None:
        return None
    module, sep, attribute = value.partition(":")
    if not sep or not module or not attribute:
        raise ConfigError(
            f"APPROVALS_AGENTS must look like 'package.module:attribute', got {value!r}"
        )
    return value
