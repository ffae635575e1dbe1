"""Parse `APPROVALS_DATABASE_URL` into a backend location.

Accepted: a file path, or `sqlite:///relative/or/absolute/path` (`sqlite:////abs` also
works), for SQLite; the default is `./approvals.db`. `postgresql://user@host:port/db`
(or `postgres://`) selects Postgres (it needs the `postgres` extra: asyncpg). Anything
else is refused by name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from bot.errors import ConfigError

DATABASE_URL_ENV = "APPROVALS_DATABASE_URL"
DEFAULT_DATABASE = "./approvals.db"
SYNCHRONOUS_ENV = "APPROVALS_SQLITE_SYNCHRONOUS"


@dataclass(frozen=True, kw_only=True)
class SqliteLocation:
    path: Path

    @property
    def display(self) -> str:
        return str(self.path)


@dataclass(frozen=True, kw_only=True)
class PostgresLocation:
    dsn: str = field(repr=False)  # as given: may carry a password
    display: str  # the URL without its password, for messages and logs


Location = SqliteLocation | PostgresLocation


def database_url_from_env(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get(DATABASE_URL_ENV, "").strip() or DEFAULT_DATABASE


def parse_database_url(url: str) -> Location:
    """A path or sqlite:///path -> SqliteLocation; postgresql://... -> PostgresLocation;
    unknown schemes refused."""
    text = url.strip()
    if not text:
        raise ConfigError(f"{DATABASE_URL_ENV} is empty; give a file path or sqlite:///path")
    scheme, sep, rest = text.partition("://")
    if not sep:
        return SqliteLocation(path=Path(text).expanduser())
    scheme = scheme.lower()
    if scheme in ("postgresql", "postgres"):
        return parse_postgres_url(text)
    if scheme != "sqlite":
        raise ConfigError(
            f"{DATABASE_URL_ENV} has unsupported scheme {scheme!r}; "
            "use a file path, sqlite:///path or postgresql://user@host:port/database"
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


def parse_postgres_url(url: str) -> PostgresLocation:
    """postgresql://user[:password]@host[:port]/database[?options]; the database name is
    required (the store never falls back to a default database)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise ConfigError(f"{DATABASE_URL_ENV} is not a valid postgresql:// URL: {error}") from None
    if not parts.hostname or not parts.path.strip("/"):
        raise ConfigError(
            f"{DATABASE_URL_ENV} must name a host and a database: "
            "postgresql://user@host:port/database"
        )
    user = f"{parts.username}@" if parts.username else ""
    where = f"{parts.hostname}:{port}" if port else parts.hostname
    display = urlunsplit((parts.scheme, f"{user}{where}", parts.path, "", ""))
    return PostgresLocation(dsn=url, display=display)


def synchronous_from_env(environ: Mapping[str, str] | None = None) -> Literal["FULL", "NORMAL"]:
    """FULL (default) or NORMAL, from APPROVALS_SQLITE_SYNCHRONOUS."""
    env = os.environ if environ is None else environ
    value = env.get(SYNCHRONOUS_ENV, "").strip().upper() or "FULL"
    if value == "FULL":
        return "FULL"
    if value == "NORMAL":
        return "NORMAL"
    raise ConfigError(f"{SYNCHRONOUS_ENV} must be FULL or NORMAL, not {value!r}")
