"""SqliteStore: the Store on one SQLite file, joined from its concept parts, and
`open_store`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from bot.clock import Clock, utc_now
from bot.errors import ConfigError
from store.api import Store
from store.config import database_url_from_env, parse_database_url, synchronous_from_env
from store.crypto import KeyRing, Sealer
from store.engine import EngineStore
from store.keys import KEYS_ENV, resolve_keyring
from store.records import MigrationReport, SchemaStatus
from store.schema import bundled_migrations
from store.sqlite.approvals import SqliteApprovals
from store.sqlite.audit import SqliteAudit
from store.sqlite.connection import DEFAULT_BUSY_TIMEOUT_MS, Database, Synchronous
from store.sqlite.ledger import SqliteLedger
from store.sqlite.migrations import ENGINE, current_version, migrate
from store.sqlite.rotation import SqliteKeyRotation
from store.sqlite.runs import SqliteRuns
from store.sqlite.standing import SqliteStanding
from store.sqlite.votes import SqliteVotes


class SqliteStore(EngineStore):
    """The embedded engine. Open it with `open_store`; close it with `close()`."""

    def __init__(
        self,
        database: Database,
        keyring: KeyRing,
        clock: Clock = utc_now,
        *,
        migration_report: MigrationReport,
    ) -> None:
        audit = SqliteAudit(database, clock)
        sealer = Sealer(keyring, audit)
        super().__init__(
            runs=SqliteRuns(database, sealer, clock),
            approvals=SqliteApprovals(database, clock),
            votes=SqliteVotes(database, clock),
            standing=SqliteStanding(database, clock),
            audit=audit,
            ledger=SqliteLedger(database, sealer, clock),
        )
        self.rotate_keys = SqliteKeyRotation(database, sealer, audit).rotate_keys
        self.database = database
        self.keyring = keyring
        self.migration_report = migration_report
        self._latest_schema = len(bundled_migrations(ENGINE))

    async def schema_status(self) -> SchemaStatus:
        return SchemaStatus(found=await current_version(self.database), latest=self._latest_schema)

    async def close(self) -> None:
        await self.database.close()


async def open_store(
    url: str | None = None,
    *,
    keyring: KeyRing | None = None,
    clock: Clock | None = None,
    synchronous: Synchronous | None = None,
    environ: Mapping[str, str] | None = None,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
) -> SqliteStore:
    """Open (creating if needed) the database at `url` and migrate it.

    `url`: a file path or sqlite:///path; default APPROVALS_DATABASE_URL, else
    ./approvals.db. `keyring`: default APPROVALS_KEYS, else the key file beside the
    database (created on first run). `synchronous`: default
    APPROVALS_SQLITE_SYNCHRONOUS, else FULL (see store.sqlite.connection).
    `busy_timeout_ms`: how long a write waits for another connection's lock before it
    fails with StoreError.
    """
    env = os.environ if environ is None else environ
    location = parse_database_url(url if url is not None else database_url_from_env(env))
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
        ring = keyring or resolve_keyring(
            path, environ=env, may_create=not await _sealed_key_ids(database)
        )
        await _check_keys_cover(database, ring, path)
    except BaseException:
        await database.close()
        raise
    return SqliteStore(database, ring, now, migration_report=report)


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


async def _sealed_key_ids(database: Database) -> set[str]:
    rows = await database.read(
        "SELECT key_id FROM run_blobs UNION SELECT result_key_id FROM ledger "
        "WHERE result_key_id IS NOT NULL"
    )
    return {str(row[0]) for row in rows}


async def _check_keys_cover(database: Database, keyring: KeyRing, path: Path) -> None:
    missing = sorted(await _sealed_key_ids(database) - set(keyring.key_ids))
    if missing:
        raise ConfigError(
            f"database {path} holds data sealed with key id(s) {', '.join(missing)}, which the "
            f"key ring lacks (it has {', '.join(keyring.key_ids)}); add them to {KEYS_ENV} "
            "or the key file"
        )


def _satisfies_store_protocol(store: SqliteStore) -> Store:
    """Never called: mypy checks here that SqliteStore implements the Store protocol."""
    return store
