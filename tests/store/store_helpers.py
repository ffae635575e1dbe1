"""Helpers shared by the store tests (imported by name: tests are not a package)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from store import SqliteStore
from store.records import NewApproval

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


@contextmanager
def raw(db_path: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection, as an attacker or an operator with the file has."""
    with closing(sqlite3.connect(db_path, isolation_level=None)) as connection:
        yield connection


async def make_run(store: SqliteStore, run_id: str = "run-1", state: str = '{"n": 1}') -> None:
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
