"""Persistence for approvals-bot: encrypted run blobs, approvals, audit log, ledger.

Callers use the `Store` protocol (store.api) and open the backend with `open_store`.
The modules here hold what several concepts share (records, rows, sealing, the audit
chain, migration numbering), store/sql/ the concept parts with their rules and SQL;
each backend package beside them (store/sqlite/, store/postgres/) holds its connections,
its reading of the SQL and its migrations.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bot.clock import Clock
from bot.errors import ConfigError
from store.config import PostgresLocation, database_url_from_env, parse_database_url
from store.crypto import KeyRing
from store.sqlite.opening import DEFAULT_BUSY_TIMEOUT_MS, Synchronous
from store.sqlite.store import SqliteStore, open_sqlite_store

if TYPE_CHECKING:
    from store.postgres.store import PostgresStore

__all__ = ["SqliteStore", "open_store"]


async def open_store(
    url: str | None = None,
    *,
    keyring: KeyRing | None = None,
    clock: Clock | None = None,
    synchronous: Synchronous | None = None,
    environ: Mapping[str, str] | None = None,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    keys_required: bool = True,
) -> SqliteStore | PostgresStore:
    """Open the database at `url` (default APPROVALS_DATABASE_URL, else ./approvals.db)
    with the backend its scheme names, migrated. `synchronous` and `busy_timeout_ms` are
    SQLite's (store.sqlite.store.open_sqlite_store); Postgres takes its pool size from
    APPROVALS_PG_POOL_SIZE (store.postgres.store.open_postgres_store). Not
    `keys_required`: a store to read what is stored in clear, opened without its keys
    where they are missing (anything sealed then fails, saying why: store.crypto.NoKeys)."""
    env = os.environ if environ is None else environ
    location = parse_database_url(url if url is not None else database_url_from_env(env))
    if isinstance(location, PostgresLocation):
        return await _open_postgres(
            location, keyring=keyring, clock=clock, environ=env, keys_required=keys_required
        )
    return await open_sqlite_store(
        location,
        keyring=keyring,
        clock=clock,
        synchronous=synchronous,
        environ=env,
        busy_timeout_ms=busy_timeout_ms,
        keys_required=keys_required,
    )


async def _open_postgres(
    location: PostgresLocation,
    *,
    keyring: KeyRing | None,
    clock: Clock | None,
    environ: Mapping[str, str],
    keys_required: bool,
) -> PostgresStore:
    try:
        from store.postgres.store import open_postgres_store
    except ImportError as error:
        raise ConfigError(
            f"database {location.display} is Postgres, which needs the postgres extra "
            f"(pip install -e '.[postgres]' in the approvals-bot checkout): {error}"
        ) from None
    return await open_postgres_store(
        location, keyring=keyring, clock=clock, environ=environ, keys_required=keys_required
    )
