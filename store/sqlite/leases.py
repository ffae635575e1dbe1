"""Run leases and request memory on SQLite (the rules: store.leases).

Each operation is one write transaction (BEGIN IMMEDIATE), so its reads and its
conditional updates are one atomic step across every connection on the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from bot.clock import Clock
from bot.errors import InputError
from store.api import WORKING_RUN_STATUSES, RunLease, RunRecord, RunStatus
from store.leases import (
    check_claim,
    check_release,
    check_request_key,
    check_seconds,
    expiry,
    held_by_another,
    lease_lost,
    lease_of,
)
from store.rows import RUN_COLUMNS, row_to_run, to_db
from store.sqlite.connection import Database, fetch_all, fetch_one

_WORKING = ", ".join(f"'{status}'" for status in sorted(WORKING_RUN_STATUSES))


def end_lease(connection: sqlite3.Connection, run_id: str) -> None:
    """The run stopped working (saved, paused, finished, cancelled): nobody holds it, and
    the token moves on, so its last holder can write nothing more for it."""
    connection.execute(
        "UPDATE run_leases SET owner = NULL, expires_at = NULL, token = token + 1 "
        "WHERE run_id = ? AND owner IS NOT NULL",
        (run_id,),
    )


def lease_row(connection: sqlite3.Connection, run_id: str) -> sqlite3.Row | None:
    return fetch_one(
        connection, "SELECT owner, expires_at, token FROM run_leases WHERE run_id = ?", (run_id,)
    )


class SqliteRunLeases:
    """The RunLeaseStore on SQLite."""

    def __init__(self, database: Database, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    async def claim_run(
        self,
        run_id: str,
        *,
        expected_status: RunStatus,
        new_status: RunStatus,
        owner: str,
        lease_seconds: float,
    ) -> RunLease | None:
        check_claim(new_status=new_status, owner=owner, lease_seconds=lease_seconds)
        now = self._clock()

        def body(connection: sqlite3.Connection) -> RunLease | None:
            found = fetch_one(connection, "SELECT status FROM runs WHERE run_id = ?", (run_id,))
            if found is None:
                raise InputError(f"no run {run_id!r}")
            if found["status"] != expected_status:
                return None
            current = lease_row(connection, run_id)
            if expected_status in WORKING_RUN_STATUSES and held_by_another(
                current, owner=owner, now=now
            ):
                return None
            row = fetch_one(
                connection,
                "UPDATE runs SET status = ?, version = version + 1, updated_at = ? "
                f"WHERE run_id = ? RETURNING {RUN_COLUMNS}",
                (new_status, to_db(now), run_id),
            )
            assert row is not None
            token = (int(current["token"]) if current is not None else 0) + 1
            lease = fetch_one(
                connection,
                "INSERT INTO run_leases (run_id, owner, expires_at, token) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, "
                "expires_at = excluded.expires_at, token = excluded.token "
                "RETURNING owner, expires_at, token",
                (run_id, owner, to_db(expiry(now, lease_seconds)), token),
            )
            assert lease is not None
            return lease_of(row_to_run(row), lease)

        return await self._db.transaction(body)

    async def renew_run_lease(self, lease: RunLease, *, lease_seconds: float) -> RunLease:
        check_seconds("lease_seconds", lease_seconds)
        now = self._clock()
        until = to_db(expiry(now, lease_seconds))

        def body(connection: sqlite3.Connection) -> RunLease:
            renewed = fetch_one(
                connection,
                "UPDATE run_leases SET expires_at = ? WHERE run_id = ? AND owner = ? "
                "AND token = ? RETURNING owner, expires_at, token",
                (until, lease.run_id, lease.owner, lease.token),
            )
            if renewed is None:
                raise lease_lost(lease.run_id, lease.token, lease_row(connection, lease.run_id))
            connection.execute(
                "UPDATE ledger SET lease_expires_at = ? WHERE run_id = ? AND lease_owner = ? "
                "AND state = 'executing'",
                (until, lease.run_id, lease.owner),
            )
            run = fetch_one(
                connection, f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (lease.run_id,)
            )
            assert run is not None
            return lease_of(row_to_run(run), renewed)

        return await self._db.transaction(body)

    async def release_run_lease(self, lease: RunLease, *, new_status: RunStatus) -> RunRecord:
        check_release(new_status)
        now = to_db(self._clock())

        def body(connection: sqlite3.Connection) -> RunRecord:
            held = fetch_one(
                connection,
                "SELECT 1 FROM run_leases WHERE run_id = ? AND owner = ? AND token = ?",
                (lease.run_id, lease.owner, lease.token),
            )
            row = None
            if held is not None:
                row = fetch_one(
                    connection,
                    "UPDATE runs SET status = ?, version = version + 1, updated_at = ? "
                    f"WHERE run_id = ? AND status IN ({_WORKING}) RETURNING {RUN_COLUMNS}",
                    (new_status, now, lease.run_id),
                )
            if row is None:
                raise lease_lost(lease.run_id, lease.token, lease_row(connection, lease.run_id))
            end_lease(connection, lease.run_id)
            return row_to_run(row)

        return await self._db.transaction(body)

    async def run_lease(self, run_id: str) -> RunLease | None:
        lease = await self._db.read_one(
            "SELECT owner, expires_at, token FROM run_leases WHERE run_id = ? "
            "AND owner IS NOT NULL",
            (run_id,),
        )
        if lease is None:
            return None
        run = await self._db.read_one(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        return None if run is None else lease_of(row_to_run(run), lease)

    async def abandoned_runs(self, *, limit: int = 100) -> list[RunRecord]:
        rows = await self._db.read(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE status IN ({_WORKING}) AND run_id IN "
            "(SELECT run_id FROM run_leases WHERE owner IS NOT NULL AND expires_at <= ?) "
            "ORDER BY updated_at, run_id LIMIT ?",
            (to_db(self._clock()), limit),
        )
        return [row_to_run(row) for row in rows]


class SqliteRequestMemory:
    """The RequestMemoryStore on SQLite."""

    def __init__(self, database: Database, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    async def remember_requests(self, requests: Sequence[tuple[str, float]]) -> list[bool]:
        for key, ttl_seconds in requests:
            check_request_key(key, ttl_seconds)
        now = self._clock()
        at = to_db(now)

        def body(connection: sqlite3.Connection) -> list[bool]:
            return [
                bool(
                    fetch_all(
                        connection,
                        "INSERT INTO request_memory (request_key, expires_at) VALUES (?, ?) "
                        "ON CONFLICT (request_key) DO UPDATE SET expires_at = "
                        "excluded.expires_at WHERE request_memory.expires_at <= ? "
                        "RETURNING request_key",
                        (key, to_db(expiry(now, ttl_seconds)), at),
                    )
                )
                for key, ttl_seconds in requests
            ]

        return await self._db.transaction(body) if requests else []

    async def forget_expired_requests(self) -> int:
        now = to_db(self._clock())

        def body(connection: sqlite3.Connection) -> int:
            return connection.execute(
                "DELETE FROM request_memory WHERE expires_at <= ?", (now,)
            ).rowcount

        return await self._db.transaction(body)
