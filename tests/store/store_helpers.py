"""Helpers shared by the store tests (imported by name: tests are not a package)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from store.api import Store
from store.records import NewApproval
from tests.store.postgres_db import RawPostgres, RawRefused

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DIGEST = "a" * 64


@dataclass(kw_only=True)
class Clock:
    """A clock tests move by hand (leases and expiry without sleeping)."""

    now: datetime = field(default=T0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class RawSqlite:
    """A plain sqlite3 connection, as an attacker or an operator with the file has
    (sqlite3's calls; a refusal by a trigger or constraint is RawRefused)."""

    def __init__(self, path: str) -> None:
        self._connection = sqlite3.connect(path, isolation_level=None)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._connection.execute(sql, params)
        except sqlite3.IntegrityError as error:
            raise RawRefused(str(error)) from error

    def executescript(self, sql: str) -> None:
        self._connection.executescript(sql)

    def drop_trigger(self, name: str, table: str) -> None:
        self._connection.execute(f"DROP TRIGGER {name}")

    def close(self) -> None:
        self._connection.close()


Raw = RawSqlite | RawPostgres


@contextmanager
def raw(database_url: str | Path) -> Iterator[Raw]:
    """A plain connection to the store's database, whichever the engine."""
    url = str(database_url)
    connection = RawPostgres(url) if url.startswith("postgresql://") else RawSqlite(url)
    try:
        yield connection
    finally:
        connection.close()


async def make_run(store: Store, run_id: str = "run-1", state: str = '{"n": 1}') -> None:
    await store.create_run(
        run_id=run_id,
        agent_name="ops",
        agent_version="1",
        schema_version="1.0",
        state_json=state,
        status="paused",
        requester="U-REQ",
    )


def new_approval(
    run_id: str = "run-1",
    call: str = "call-1",
    *,
    expires_at: datetime | None = None,
    approval_id: str | None = None,
) -> NewApproval:
    return NewApproval(
        approval_id=approval_id or f"ap-{run_id}-{call}",
        run_id=run_id,
        tool_call_id=call,
        tool_name="deploy_release",
        arguments_digest=DIGEST,
        snapshot='{"service": "api"}',
        requester="U-REQ",
        expires_at=expires_at,
    )


def database_bytes(db_path: Path) -> bytes:
    """The database file and its WAL, as they lie on disk."""
    wal = db_path.with_name(db_path.name + "-wal")
    return db_path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
