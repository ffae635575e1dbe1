"""SqliteStore: the Store on one SQLite file, joined from the concept parts
(store.sql), and `open_sqlite_store`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from bot.clock import Clock, utc_now
from bot.errors import ConfigError
from store.api import Store
from store.config import SqliteLocation, synchronous_from_env
from store.crypto import KeyRing
from store.keys import resolve_keyring
from store.records import MigrationReport
from store.schema import latest_version
from store.sql.chain import LinkAtCommit
from store.sql.keys import needed_key_ids, sealed_key_ids, settled_keyring
from store.sql.store import SqlStore
from store.sqlite.connection import Database
from store.sqlite.migrations import BACKEND, migrate
from store.sqlite.opening import DEFAULT_BUSY_TIMEOUT_MS, Synchronous


class SqliteStore(SqlStore):
    """The embedded backend. Open it with `open_store`; close it with `close()`."""

    def __init__(
        self,
        database: Database,
        keyring: KeyRing,
        clock: Clock = utc_now,
        *,
        migration_report: MigrationReport,
    ) -> None:
        super().__init__(
            LinkAtCommit(database),
            keyring,
            clock,
            migration_report=migration_report,
            latest_schema=latest_version(BACKEND),
            location=str(database.path),
        )
        self.database = database

    async def close(self) -> None:
        await self.database.close()


async def open_sqlite_store(
    location: SqliteLocation,
    *,
    keyring: KeyRing | None = None,
    clock: Clock | None = None,
    synchronous: Synchronous | None = None,
    environ: Mapping[str, str] | None = None,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    keys_required: bool = True,
) -> SqliteStore:
    """Open (creating if needed) the database file at `location` and migrate it.

    `keyring`: default APPROVALS_KEYS, else the key file beside the
    database (created on first run). Not `keys_required` (for reading what is stored in
    clear), a missing or short key ring is no error until something sealed is read or
    written (store.crypto.NoKeys), and no key file is created. `synchronous`: default
    APPROVALS_SQLITE_SYNCHRONOUS, else FULL (see store.sqlite.opening).
    `busy_timeout_ms`: how long a write waits for another connection's lock before it
    fails with StoreError.
    """
    env = os.environ if environ is None else environ
    path = location.path
    if not path.parent.is_dir():
        raise ConfigError(f"database directory {path.parent} does not exist")
    sync: Synchronous = synchronous or (
        "NORMAL" if synchronous_from_env(env) == "NORMAL" else "FULL"
    )
    now = clock or utc_now
    _create_private(path)
    database = await Database.open(path, synchronous=sync, busy_timeout_ms=busy_timeout_ms)
    try:
        report = await migrate(database, now=now())
        sealed = await sealed_key_ids(database)
        ring = keyring or resolve_keyring(path, environ=env, sealed=sealed, required=keys_required)
        ring = settled_keyring(
            await needed_key_ids(database), ring, str(path), required=keys_required
        )
    except BaseException:
        await database.close()
        raise
    store = SqliteStore(database, ring, now, migration_report=report)
    try:
        await store.finish_opening()
    except BaseException:
        await store.close()
        raise
    return store


def _create_private(path: Path) -> None:
    """Create a new database file with mode 0600 (SQLite gives its -wal and -shm files the
    same mode): it holds the audit trail and review snapshots. An existing file is kept.
    A directory the process may not write is a ConfigError naming the file."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as error:
        raise ConfigError(f"cannot create the database {path}: {error.strerror}") from None


def _satisfies_store_protocol(store: SqliteStore) -> Store:
    """Never called: mypy checks here that SqliteStore implements the Store protocol."""
    return store
