"""Service settings from the environment: the worker id, the approval lifetime, how long
a run stays leased to a silent worker and how often the sweeper looks.

The worker id names this process as the owner of ledger leases (and in the audit log as
`service:<id>`). In the single-process SQLite mode it is stable per installation: it is
derived from the database file's absolute path, so a process restarted after a crash
is the same owner as its dead predecessor and takes over that predecessor's execution
leases at once (the ledger lets an owner re-claim its own lease) instead of waiting for
them to expire. Two processes on one database file would then share an id: that is not
a supported deployment (the terminal demo counts: point it at its own database, not at
the one a live `serve` uses). Replicas on a shared database must each set a distinct
`APPROVALS_WORKER_ID` (e.g. the pod name) and rely on lease expiry for takeover.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import socket
from collections.abc import Mapping
from datetime import timedelta

from bot.errors import ConfigError
from bot.service.leases import DEFAULT_LEASE_SECONDS
from store.config import PostgresLocation, parse_database_url

WORKER_ID_ENV = "APPROVALS_WORKER_ID"
APPROVAL_TTL_ENV = "APPROVALS_APPROVAL_TTL_SECONDS"
LEASE_ENV = "APPROVALS_LEASE_SECONDS"
SWEEP_ENV = "APPROVALS_SWEEP_SECONDS"
DEFAULT_SWEEP_SECONDS = 10.0  # an unclicked card shows "expired" within this of its expiry
DEFAULT_APPROVAL_TTL = timedelta(hours=24)
_WORKER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def installation_worker_id(database_url: str, environ: Mapping[str, str] | None = None) -> str:
    """`APPROVALS_WORKER_ID` when set, else `local-<12 hex of the database's path>` for
    SQLite, or `<host>-<pid>` for Postgres (one worker per replica process)."""
    env = os.environ if environ is None else environ
    explicit = env.get(WORKER_ID_ENV, "").strip()
    if explicit:
        if not _WORKER_ID.match(explicit):
            raise ConfigError(
                f"{WORKER_ID_ENV} must be 1-128 letters, digits, '.', '_', ':' or '-', "
                "starting with a letter or digit"
            )
        return explicit
    location = parse_database_url(database_url)
    if isinstance(location, PostgresLocation):
        # Replicas share the database: each process is a worker of its own.
        return f"{socket.gethostname()}-{os.getpid()}"
    path = location.path.expanduser().resolve()
    return "local-" + hashlib.sha256(str(path).encode()).hexdigest()[:12]


def lease_seconds_from_env(environ: Mapping[str, str] | None = None) -> float:
    """`APPROVALS_LEASE_SECONDS`: how long a run stays with a worker that stopped renewing
    its lease before another worker takes it over (default 15; at least 1)."""
    return _seconds(environ, LEASE_ENV, default=DEFAULT_LEASE_SECONDS, least=1.0)


def sweep_seconds_from_env(environ: Mapping[str, str] | None = None) -> float:
    """`APPROVALS_SWEEP_SECONDS`: how often the sweeper expires, reminds and takes over
    abandoned runs (default 10; at least 0.1)."""
    return _seconds(environ, SWEEP_ENV, default=DEFAULT_SWEEP_SECONDS, least=0.1)


def _seconds(
    environ: Mapping[str, str] | None, name: str, *, default: float, least: float
) -> float:
    env = os.environ if environ is None else environ
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, not {text!r}") from None
    if not (math.isfinite(seconds) and seconds >= least):
        raise ConfigError(f"{name} must be a finite number >= {least:g}, not {text!r}")
    return seconds


def approval_ttl_from_env(environ: Mapping[str, str] | None = None) -> timedelta | None:
    """`APPROVALS_APPROVAL_TTL_SECONDS` (a positive number, or 0 for no expiry);
    default 24 hours."""
    env = os.environ if environ is None else environ
    text = env.get(APPROVAL_TTL_ENV, "").strip()
    if not text:
        return DEFAULT_APPROVAL_TTL
    try:
        seconds = float(text)
    except ValueError:
        raise ConfigError(f"{APPROVAL_TTL_ENV} must be a number of seconds, not {text!r}") from None
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise ConfigError(f"{APPROVAL_TTL_ENV} must be a finite number >= 0, not {text!r}")
    return None if seconds == 0 else timedelta(seconds=seconds)
