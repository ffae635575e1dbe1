"""Run leases and request memory: their rules and their SQL.

A run being worked on (`running`, `resuming`) has a lease: its owner (a worker id), an
expiry the owner keeps pushing forward while it works (a heartbeat), and a fencing token
that moves on at every claim and every release. A claim from a working status succeeds
only when no other owner holds a live lease, so of several workers exactly one works on
a run, and another takes it over once the holder stopped renewing. A takeover is a
status transition (the run's version moves), so the old holder's `save_run_state`
loses its compare-and-set; its ledger claims and renewals name the token and are refused
once it moved (LeaseLostError).

Each operation is one write transaction. A claim reads the run and its lease `FOR
UPDATE` before it changes them, so of two workers claiming one run at once (on Postgres,
in two processes) the second waits for the first and then sees its lease; on SQLite the
writer holds the whole database anyway. A sweep's takeover claims `skip_locked`: a run
(or lease) another transaction holds is left alone instead of waited for. The heartbeat
renews every lease a worker holds in one conditional update (`renew_run_leases`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

from bot.clock import Clock
from bot.errors import InputError, LeaseLostError
from store.records import (
    WORKING_RUN_STATUSES,
    RunLease,
    RunRecord,
    RunStatus,
    check_run_status,
)
from store.rows import RUN_COLUMNS, Row, from_db, row_to_run, to_db
from store.tx import Body, Database, many, one, placeholders, run

_WORKING = ", ".join(f"'{status}'" for status in sorted(WORKING_RUN_STATUSES))
LEASE_COLUMNS = "owner, expires_at, token"


# -- the rules ---------------------------------------------------------------------------


def check_claim(*, new_status: str, owner: str, lease_seconds: float) -> None:
    """InputError naming what is wrong with a claim's arguments."""
    check_run_status(new_status)
    if new_status not in WORKING_RUN_STATUSES:
        raise InputError(
            f"a run is claimed to work on it ({', '.join(sorted(WORKING_RUN_STATUSES))}), "
            f"not to make it {new_status!r}"
        )
    if not owner.strip():
        raise InputError("a run lease needs an owner")
    check_seconds("lease_seconds", lease_seconds)


def check_release(new_status: str) -> None:
    check_run_status(new_status)
    if new_status in WORKING_RUN_STATUSES:
        raise InputError(f"releasing a run's lease leaves it not working, not {new_status!r}")


def check_seconds(name: str, seconds: float) -> None:
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InputError(f"{name} must be a positive number of seconds, not {seconds}")


def expiry(now: datetime, seconds: float) -> datetime:
    return now + timedelta(seconds=seconds)


def held_by_another(lease: Row | None, *, owner: str, now: datetime) -> bool:
    """Whether the lease row shows another owner's live lease."""
    if lease is None or lease["owner"] is None or lease["owner"] == owner:
        return False
    return from_db(lease["expires_at"]) > now


def lease_of(run: RunRecord, lease: Row) -> RunLease:
    return RunLease(
        run=run,
        owner=lease["owner"],
        token=int(lease["token"]),
        expires_at=from_db(lease["expires_at"]),
    )


def lease_lost(run_id: str, token: int, now: Row | None) -> LeaseLostError:
    """A write for a run under a lease token that is no longer the run's (`now`: its lease
    row as it is, None when it has none)."""
    if now is None or now["owner"] is None:
        holder = "nobody holds it now"
    else:
        holder = f"{now['owner']} holds it under lease {now['token']}"
    return LeaseLostError(
        f"run {run_id} is no longer ours under lease {token} ({holder}); nothing was written"
    )


def check_request_key(key: str, ttl_seconds: float) -> None:
    if not key or len(key) > 200:
        raise InputError("a remembered request needs a key of 1-200 characters")
    check_seconds("ttl_seconds", ttl_seconds)


# -- the SQL -----------------------------------------------------------------------------


class _Busy:
    """A row another transaction holds right now."""


def end_lease(run_id: str) -> Body[None]:
    """The run stopped working (saved, paused, finished, cancelled): nobody holds it, and
    the token moves on, so its last holder can write nothing more for it."""
    yield run(
        "UPDATE run_leases SET owner = NULL, expires_at = NULL, token = token + 1 "
        "WHERE run_id = ? AND owner IS NOT NULL",
        (run_id,),
    )


def lease_row(run_id: str, *, lock: bool = False) -> Body[Row | None]:
    row: Row | None = yield one(
        f"SELECT {LEASE_COLUMNS} FROM run_leases WHERE run_id = ?"
        + (" FOR UPDATE" if lock else ""),
        (run_id,),
    )
    return row


def insert_lease(run_id: str, owner: str, expires_at: str, token: int) -> Body[Row]:
    row: Row | None = yield one(
        f"INSERT INTO run_leases (run_id, {LEASE_COLUMNS}) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, "
        f"expires_at = excluded.expires_at, token = excluded.token RETURNING {LEASE_COLUMNS}",
        (run_id, owner, expires_at, token),
    )
    assert row is not None
    return row


def _end_ledger_leases_of_others(run_id: str, owner: str, now: str) -> Body[None]:
    """A takeover: the run's calls still leased to the worker it was taken from are that
    worker's no more (it renewed them with the run's lease, which ran out), so the new
    holder's claims find them interrupted instead of held."""
    yield run(
        "UPDATE ledger SET lease_expires_at = ? WHERE run_id = ? AND state = 'executing' "
        "AND lease_owner IS NOT NULL AND lease_owner <> ? AND lease_expires_at > ?",
        (now, run_id, owner, now),
    )


BUSY: Final = _Busy()
"""What `_locked` answers for a row another transaction holds (with `skip_locked`)."""


def _locked(
    table: str, columns: str, run_id: str, *, skip_locked: bool
) -> Body[Row | _Busy | None]:
    """The run's row of `table`, locked to the commit (None when there is none). With
    `skip_locked`, BUSY instead of waiting when another transaction holds it (the row
    exists: a plain read, which waits for no lock, finds it)."""
    mark = " FOR UPDATE SKIP LOCKED" if skip_locked else " FOR UPDATE"
    found: Row | None = yield one(
        f"SELECT {columns} FROM {table} WHERE run_id = ?{mark}", (run_id,)
    )
    if found is not None or not skip_locked:
        return found
    exists = yield one(f"SELECT 1 FROM {table} WHERE run_id = ?", (run_id,))
    return None if exists is None else BUSY


def _renew(leases: Sequence[RunLease], until: str) -> Body[list[RunLease]]:
    """Extend every lease still held under its token to `until`, with the ledger leases
    of their runs' executing calls; the renewed ones, in the order given."""
    held = " OR ".join(["(run_id = ? AND owner = ? AND token = ?)"] * len(leases))
    rows = yield many(
        f"UPDATE run_leases SET expires_at = ? WHERE {held} RETURNING run_id, {LEASE_COLUMNS}",
        (until, *(value for lease in leases for value in (lease.run_id, lease.owner, lease.token))),
    )
    if not rows:
        return []
    calls = " OR ".join(["(run_id = ? AND lease_owner = ?)"] * len(rows))
    yield run(
        f"UPDATE ledger SET lease_expires_at = ? WHERE state = 'executing' AND ({calls})",
        (until, *(value for row in rows for value in (row["run_id"], row["owner"]))),
    )
    found = yield many(
        f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id IN ({placeholders(len(rows))})",
        [row["run_id"] for row in rows],
    )
    runs = {row["run_id"]: row_to_run(row) for row in found}
    renewed = {(row["run_id"], row["owner"], int(row["token"])): row for row in rows}
    return [
        lease_of(runs[lease.run_id], renewed[key])
        for lease in leases
        if (key := (lease.run_id, lease.owner, lease.token)) in renewed
    ]


class Leases:
    """The RunLeaseStore."""

    def __init__(self, database: Database, clock: Clock) -> None:
        self._db = database
        self._clock = clock
        self.unresumed_runs = _Unresumed(database).unresumed_runs

    async def claim_run(
        self,
        run_id: str,
        *,
        expected_status: RunStatus,
        new_status: RunStatus,
        owner: str,
        lease_seconds: float,
        skip_locked: bool = False,
        unless_held: bool = False,
    ) -> RunLease | None:
        check_claim(new_status=new_status, owner=owner, lease_seconds=lease_seconds)
        now = self._clock()

        def body() -> Body[RunLease | None]:
            found = yield from _locked("runs", "status, held_by", run_id, skip_locked=skip_locked)
            if found is None:
                raise InputError(f"no run {run_id!r}")
            if isinstance(found, _Busy) or found["status"] != expected_status:
                return None
            if unless_held and found["held_by"] is not None:
                return None
            current = yield from _locked(
                "run_leases", LEASE_COLUMNS, run_id, skip_locked=skip_locked
            )
            if isinstance(current, _Busy):
                return None
            if expected_status in WORKING_RUN_STATUSES and held_by_another(
                current, owner=owner, now=now
            ):
                return None
            row = yield one(
                "UPDATE runs SET status = ?, version = version + 1, updated_at = ? "
                f"WHERE run_id = ? RETURNING {RUN_COLUMNS}",
                (new_status, to_db(now), run_id),
            )
            assert row is not None
            if expected_status in WORKING_RUN_STATUSES:
                yield from _end_ledger_leases_of_others(run_id, owner, to_db(now))
            token = (int(current["token"]) if current is not None else 0) + 1
            lease = yield from insert_lease(run_id, owner, to_db(expiry(now, lease_seconds)), token)
            return lease_of(row_to_run(row), lease)

        return await self._db.transact(body)

    async def renew_run_lease(self, lease: RunLease, *, lease_seconds: float) -> RunLease:
        check_seconds("lease_seconds", lease_seconds)
        until = to_db(expiry(self._clock(), lease_seconds))

        def body() -> Body[RunLease]:
            renewed = yield from _renew([lease], until)
            if not renewed:
                raise lease_lost(lease.run_id, lease.token, (yield from lease_row(lease.run_id)))
            return renewed[0]

        return await self._db.transact(body)

    async def renew_run_leases(
        self, leases: Sequence[RunLease], *, lease_seconds: float
    ) -> list[RunLease]:
        check_seconds("lease_seconds", lease_seconds)
        if not leases:
            return []
        until = to_db(expiry(self._clock(), lease_seconds))
        return await self._db.transact(lambda: _renew(leases, until))

    async def release_run_lease(self, lease: RunLease, *, new_status: RunStatus) -> RunRecord:
        check_release(new_status)
        now = to_db(self._clock())

        def body() -> Body[RunRecord]:
            held = yield one(
                "SELECT 1 FROM run_leases WHERE run_id = ? AND owner = ? AND token = ? FOR UPDATE",
                (lease.run_id, lease.owner, lease.token),
            )
            row = None
            if held is not None:
                row = yield one(
                    "UPDATE runs SET status = ?, version = version + 1, updated_at = ? "
                    f"WHERE run_id = ? AND status IN ({_WORKING}) RETURNING {RUN_COLUMNS}",
                    (new_status, now, lease.run_id),
                )
            if row is None:
                raise lease_lost(lease.run_id, lease.token, (yield from lease_row(lease.run_id)))
            yield from end_lease(lease.run_id)
            return row_to_run(row)

        return await self._db.transact(body)

    async def run_lease(self, run_id: str) -> RunLease | None:
        lease = await self._db.read_one(
            f"SELECT {LEASE_COLUMNS} FROM run_leases WHERE run_id = ? AND owner IS NOT NULL",
            (run_id,),
        )
        if lease is None:
            return None
        found = await self._db.read_one(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
        )
        return None if found is None else lease_of(row_to_run(found), lease)

    async def abandoned_runs(self, *, limit: int = 100) -> list[RunRecord]:
        rows = await self._db.read(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE status IN ({_WORKING}) AND run_id IN "
            "(SELECT run_id FROM run_leases WHERE owner IS NOT NULL AND expires_at <= ?) "
            "ORDER BY updated_at, run_id LIMIT ?",
            (to_db(self._clock()), limit),
        )
        return [row_to_run(row) for row in rows]


_DECIDED_AT = "COALESCE(a.revoked_at, a.decided_at, a.expires_at)"


class _Unresumed:
    """`unresumed_runs` (part of Leases)."""

    def __init__(self, database: Database) -> None:
        self._db = database

    async def unresumed_runs(
        self, *, decided_before: datetime, limit: int = 100
    ) -> list[RunRecord]:
        rows = await self._db.read(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE status = 'paused' AND NOT EXISTS "
            "(SELECT 1 FROM approvals a WHERE a.run_id = runs.run_id AND (a.status = 'pending' "
            f"OR {_DECIDED_AT} > ?)) AND EXISTS (SELECT 1 FROM approvals a "
            f"WHERE a.run_id = runs.run_id AND {_DECIDED_AT} > runs.updated_at) "
            "ORDER BY updated_at, run_id LIMIT ?",
            (to_db(decided_before), limit),
        )
        return [row_to_run(row) for row in rows]


class RequestMemory:
    """The RequestMemoryStore."""

    def __init__(self, database: Database, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    async def remember_requests(self, requests: Sequence[tuple[str, float]]) -> list[bool]:
        for key, ttl_seconds in requests:
            check_request_key(key, ttl_seconds)
        if not requests:
            return []
        now = self._clock()
        at = to_db(now)

        def body() -> Body[list[bool]]:
            answers = []
            for key, ttl_seconds in requests:
                row = yield one(
                    "INSERT INTO request_memory (request_key, expires_at) VALUES (?, ?) "
                    "ON CONFLICT (request_key) DO UPDATE SET expires_at = excluded.expires_at "
                    "WHERE request_memory.expires_at <= ? RETURNING request_key",
                    (key, to_db(expiry(now, ttl_seconds)), at),
                )
                answers.append(row is not None)
            return answers

        return await self._db.transact(body)

    async def forget_expired_requests(self) -> int:
        now = to_db(self._clock())

        def body() -> Body[int]:
            rows = yield many(
                "DELETE FROM request_memory WHERE expires_at <= ? RETURNING request_key", (now,)
            )
            return len(rows)

        return await self._db.transact(body)
