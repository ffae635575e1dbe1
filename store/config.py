"""Parse `APPROVALS_DATABASE_URL` into an engine location.

Accepted: a file path, or `sqlite:///relative/or/absolute/path` (`sqlite:////abs` also
works); the default is `./approvals.db`. `postgresql://...` is reserved for the Postgres
engine, which this build does not include. Anything else is refused by name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bot.errors import ConfigError

DATABASE_URL_ENV = "APPROVALS_DATABASE_URL"
DEFAULT_DATABASE = "./approvals.db"
SYNCHRONOUS_ENV = "APPROVALS_SQLITE_SYNCHRONOUS"


@dataclass(frozen=True, kw_only=True)
class SqliteLocation:
    path: Path


def database_url_from_env(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get(DATABASE_URL_ENV, "").strip() or DEFAULT_DATABASE


def parse_database_url(url: str) -> SqliteLocation:
    """A path or sqlite:///path -> SqliteLocation; postgres and unknown schemes refused."""
    text = url.strip()
    if not text:
        raise ConfigError(f"{DATABASE_URL_ENV} is empty; give a file path or sqlite:///path")
    scheme, sep, rest = text.partition("://")
    if not sep:
        return SqliteLocation(path=Path(text).expanduser())
    scheme = scheme.lower()
    if scheme in ("postgresql", "postgres"):
        raise ConfigError(
            f"{DATABASE_URL_ENV} names a Postgres database; postgresql:// is reserved for "
            "the Postgres engine, not in this build (use a file path or sqlite:///path)"
        )
    if scheme != "sqlite":
        raise ConfigError(
            f"{DATABASE_URL_ENV} has unsupported scheme {scheme!r}; "
            "use a file path or sqlite:///path"
        )
    if not rest.startswith("/") or rest == "/":
        raise ConfigError(
            f"{DATABASE_URL_ENV} sqlite URL must look like sqlite:///path (three slashes)"
        )
    path = rest[1:]
    if path == ":memory:" or "?" in path:
        raise ConfigError(
            f"{DATABASE_URL_ENV} must name a database file (no :memory:, no query string)"
        )
    return SqliteLocation(path=Path(path).expanduser())


def synchronous_from_env(environ: Mapping[str, str] | None = None) -> Literal["FULL", "NORMAL"]:
    """FULL (default) or NORMAL, from APPROVALS_SQLITE_SYNCHRONOUS."""
    env = os.environ if environ is None else environ
    value = env.get(SYNCHRONOUS_ENV, "").strip().upper() or "FULL"
    if value == "FULL":
        return "FULL"
    if value == "NORMAL":
        return "NORMAL"
    raise ConfigError(f"{SYNCHRONOUS_ENV} must be FULL or NORMAL, not {value!r}")
