"""PostgresStore: the Store on a Postgres database, joined from the concept parts
(store.sql), and `open_postgres_store`.

The key ring comes from `APPROVALS_KEYS` (or the caller): there is no file beside a
Postgres database to keep a key in, and the server never sees a key or a plaintext.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from bot.clock import Clock, utc_now
from bot.errors import ConfigError
from store.api import Store
from store.config import PostgresLocation
from store.crypto import KeyRing, NoKeys
from store.keys import KEYS_ENV, missing_keys_variable, parse_keyring
from store.postgres.connection import PgDatabase, pool_size_from_env
from store.postgres.dialect import insert_linked
from store.postgres.migrations import BACKEND, migrate
from store.records import MigrationReport
from store.schema import latest_version
from store.sql.chain import Sequencer
from store.sql.keys import needed_key_ids, sealed_key_ids, settled_keyring
from store.sql.store import SqlStore


class PostgresStore(SqlStore):
    """The backend for more than one process. Open it with `open_postgres_store`."""

    def __init__(
        self,
        database: PgDatabase,
        keyring: KeyRing,
        clock: Clock = utc_now,
        *,
        migration_report: MigrationReport,
    ) -> None:
        self._sequencer = Sequencer(database, insert=insert_linked)
        super().__init__(
            self._sequencer,
            keyring,
            clock,
            migration_report=migration_report,
            latest_schema=latest_version(BACKEND),
            location=database.location,
        )
        self.database = database

    def start(self) -> None:
        """Start linking the audit log behind the writers (a task this store owns)."""
        self._sequencer.start()

    async def close(self) -> None:
        try:
            await self._sequencer.close()
        finally:
            await self.database.close()


async def open_postgres_store(
    location: PostgresLocation,
    *,
    keyring: KeyRing | None = None,
    clock: Clock | None = None,
    environ: Mapping[str, str] | None = None,
    pool_size: int | None = None,
    keys_required: bool = True,
) -> PostgresStore:
    """Connect to the database at `location` and migrate it (under the migration lock).

    `keyring`: default APPROVALS_KEYS (required, unless not `keys_required`: see
    open_sqlite_store). `pool_size`: default APPROVALS_PG_POOL_SIZE, else 10 connections."""
    env = os.environ if environ is None else environ
    configured = keyring or _configured_keyring(env)
    size = pool_size or pool_size_from_env(env)
    now = clock or utc_now
    database = await PgDatabase.open(location.dsn, location=location.display, pool_size=size)
    try:
        report = await migrate(database, now=now())
        sealed = await sealed_key_ids(database)
        ring = configured or _no_keys(location, sealed, required=keys_required)
        ring = settled_keyring(
            await needed_key_ids(database), ring, location.display, required=keys_required
        )
    except BaseException:
        await database.close()
        raise
    store = PostgresStore(database, ring, now, migration_report=report)
    store.start()
    try:
        await store.finish_opening()
    except BaseException:
        await store.close()
        raise
    return store


def _configured_keyring(env: Mapping[str, str]) -> KeyRing | None:
    configured = env.get(KEYS_ENV, "").strip()
    return parse_keyring(configured, source=KEYS_ENV) if configured else None


def _no_keys(location: PostgresLocation, sealed: set[str], *, required: bool) -> KeyRing:
    """APPROVALS_KEYS is unset: a ConfigError saying which keys to set (or NoKeys)."""
    problem = missing_keys_variable(location.display, sealed)
    if required:
        raise ConfigError(problem)
    return NoKeys(problem)


def _satisfies_store_protocol(store: PostgresStore) -> Store:
    """Never called: mypy checks here that PostgresStore implements the Store protocol."""
    return store
