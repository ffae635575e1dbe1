"""Runs: a small `runs` row for status and compare-and-set, the sealed state
in `run_blobs` (so a compare-and-set never rewrites a large blob).

The state blob's associated data binds it to its run id, the run version at which it was
written (`state_version`), its schema version and key id: a blob moved to another run, or
an older blob of the same run put back, fails to open. The plaintext's SHA-256 is kept
on the run row and checked again after opening (store.sql.run_state).
"""

from __future__ import annotations

from typing import Any, get_args

from bot.clock import Clock
from bot.errors import ConflictError, InputError, RunStateError
from store.crypto import Sealed, Sealer
from store.records import (
    FIRST_LEASE_TOKEN,
    TASK_SUMMARY_CHARS,
    WORKING_RUN_STATUSES,
    EngineStamp,
    LeaseTerms,
    RunCursor,
    RunFilter,
    RunOrigin,
    RunRecord,
    RunStatus,
    check_run_status,
)
from store.rows import RUN_COLUMNS, Row, row_to_run, to_db, to_db_optional, where_all
from store.sql import audit
from store.sql.leases import check_claim, end_lease, expiry, insert_lease
from store.sql.run_state import open_state, seal_state
from store.tx import Body, Database, IntegrityViolation, many, one, run

RUN_ORIGINS: frozenset[str] = frozenset(get_args(RunOrigin))


def check_origin(origin: str) -> None:
    if origin not in RUN_ORIGINS:
        raise InputError(f"run origin {origin!r} is not one of {sorted(RUN_ORIGINS)}")


def task_summary(task: str | None) -> str | None:
    """What a run's row keeps of its (already redacted) task: one line, clipped."""
    if task is None:
        return None
    line = " ".join(task.split())
    if len(line) <= TASK_SUMMARY_CHARS:
        return line
    return line[: TASK_SUMMARY_CHARS - 1] + "…"


def engine_columns(engine: EngineStamp | None) -> tuple[str | None, str | None, str | None]:
    """A run row's engine columns (all NULL for the bot's own run core)."""
    if engine is None:
        return (None, None, None)
    return (engine.name, engine.version, engine.schema_version)


def migration_event(reason: str | None) -> tuple[str, dict[str, Any]]:
    """The audit event of marking a run as needing migration (or clearing it)."""
    if reason is None:
        return "migration_cleared", {}
    return "needs_migration", {"reason": reason}


def hold_event(reason: str | None, via: str | None) -> tuple[str, dict[str, Any]]:
    """The audit event of holding a run (an operator's pause) or releasing it."""
    detail: dict[str, Any] = {} if reason is None else {"reason": reason}
    if via is not None:
        detail["via"] = via
    return ("unpaused" if reason is None else "paused"), detail


def purged_state(run_id: str, purged_at: str) -> RunStateError:
    """The error for reading the state of a run retention has purged."""
    return RunStateError(
        f"run {run_id} finished and its state was purged at {purged_at} (retention); "
        "its audit trail and approvals remain"
    )


def version_conflict(
    run_id: str, *, expected_version: int, version: int, status: str
) -> ConflictError:
    """A save that named a version the run has moved past."""
    return ConflictError(
        f"run {run_id!r} is at version {version} ({status}), "
        f"not the expected version {expected_version}"
    )


class Runs:
    """The RunStore."""

    def __init__(self, database: Database, sealer: Sealer, clock: Clock) -> None:
        self._db = database
        self._sealer = sealer
        self._clock = clock

    async def create_run(
        self,
        *,
        run_id: str,
        agent_name: str,
        agent_version: str,
        schema_version: str,
        state_json: str,
        status: RunStatus,
        channel: str | None = None,
        thread_ts: str | None = None,
        requester: str | None = None,
        origin: RunOrigin = "slack",
        task: str | None = None,
        engine: EngineStamp | None = None,
        lease: LeaseTerms | None = None,
    ) -> RunRecord:
        check_run_status(status)
        check_origin(origin)
        if not run_id:
            raise InputError("run id is empty")
        if lease is not None:
            check_claim(new_status=status, owner=lease.owner, lease_seconds=lease.seconds)
        sealed, digest = await seal_state(
            self._sealer, run_id, state_version=1, schema_version=schema_version,
            state_json=state_json,
        )  # fmt: skip
        moment = self._clock()
        now = to_db(moment)

        def body() -> Body[RunRecord]:
            try:
                row = yield one(
                    "INSERT INTO runs (run_id, agent_name, agent_version, schema_version, "
                    "status, version, state_version, key_id, blob_digest, channel, thread_ts, "
                    "requester, created_at, updated_at, origin, task, engine, engine_version, "
                    "engine_schema_version) "
                    "VALUES (?, ?, ?, ?, ?, 1, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    f"RETURNING {RUN_COLUMNS}",
                    (run_id, agent_name, agent_version, schema_version, status, sealed.key_id,
                     digest, channel, thread_ts, requester, now, now, origin,
                     task_summary(task), *engine_columns(engine)),
                )  # fmt: skip
            except IntegrityViolation:
                raise ConflictError(f"run {run_id!r} already exists") from None
            yield from _write_blob(run_id, sealed, insert=True)
            if lease is not None:
                yield from insert_lease(
                    run_id, lease.owner, to_db(expiry(moment, lease.seconds)), FIRST_LEASE_TOKEN
                )
            assert row is not None
            return row_to_run(row)

        return await self._db.transact(body)

    async def save_run_state(
        self,
        run_id: str,
        *,
        expected_version: int,
        state_json: str,
        status: RunStatus,
        schema_version: str,
        engine: EngineStamp | None = None,
    ) -> RunRecord:
        check_run_status(status)
        sealed, digest = await seal_state(
            self._sealer, run_id, state_version=expected_version + 1,
            schema_version=schema_version, state_json=state_json,
        )  # fmt: skip
        now = to_db(self._clock())

        def body() -> Body[RunRecord]:
            row = yield one(
                "UPDATE runs SET status = ?, version = version + 1, state_version = version + 1, "
                "schema_version = ?, key_id = ?, blob_digest = ?, updated_at = ?, engine = ?, "
                "engine_version = ?, engine_schema_version = ?, needs_migration = NULL "
                f"WHERE run_id = ? AND version = ? RETURNING {RUN_COLUMNS}",
                (
                    status,
                    schema_version,
                    sealed.key_id,
                    digest,
                    now,
                    *engine_columns(engine),
                    run_id,
                    expected_version,
                ),
            )
            if row is None:
                found = yield from _require_run(run_id)
                raise version_conflict(
                    run_id, expected_version=expected_version,
                    version=found["version"], status=found["status"],
                )  # fmt: skip
            yield from _write_blob(run_id, sealed, insert=False)
            if status not in WORKING_RUN_STATUSES:
                yield from end_lease(run_id)
            return row_to_run(row)

        return await self._db.transact(body)

    async def transition_run(
        self,
        run_id: str,
        *,
        expected_status: RunStatus,
        new_status: RunStatus,
        expected_version: int | None = None,
    ) -> RunRecord | None:
        check_run_status(expected_status)
        check_run_status(new_status)
        now = to_db(self._clock())
        version = "" if expected_version is None else " AND version = ?"
        at_version = () if expected_version is None else (expected_version,)

        def body() -> Body[RunRecord | None]:
            row = yield one(
                "UPDATE runs SET status = ?, version = version + 1, updated_at = ? "
                f"WHERE run_id = ? AND status = ?{version} RETURNING {RUN_COLUMNS}",
                (new_status, now, run_id, expected_status, *at_version),
            )
            if row is None:
                yield from _require_run(run_id)
                return None
            if new_status not in WORKING_RUN_STATUSES:
                yield from end_lease(run_id)
            return row_to_run(row)

        return await self._db.transact(body)

    async def mark_needs_migration(
        self, run_id: str, *, reason: str | None, actor: str
    ) -> RunRecord | None:
        now = to_db(self._clock())

        def body() -> Body[RunRecord | None]:
            row = yield one(
                "UPDATE runs SET needs_migration = ?, updated_at = ? "
                "WHERE run_id = ? AND needs_migration IS DISTINCT FROM CAST(? AS TEXT) "
                f"RETURNING {RUN_COLUMNS}",
                (reason, now, run_id, reason),
            )
            if row is None:
                yield from _require_run(run_id)
                return None
            kind, detail = migration_event(reason)
            yield from audit.append(kind, at=self._clock(), actor=actor, run_id=run_id,
                                    detail=detail)  # fmt: skip
            return row_to_run(row)

        return await self._db.transact(body)

    async def set_run_hold(
        self, run_id: str, *, actor: str, reason: str | None, via: str | None = None
    ) -> RunRecord | None:
        now = to_db(self._clock())
        if reason is None:
            change = "held_by = NULL, hold_reason = NULL"
            allowed = "held_by IS NOT NULL"
            values: tuple[object, ...] = ()
        else:
            change, values = "held_by = ?, hold_reason = ?", (actor, reason)
            allowed = "held_by IS NULL AND status NOT IN ('completed', 'failed', 'cancelled')"

        def body() -> Body[RunRecord | None]:
            row = yield one(
                f"UPDATE runs SET {change}, updated_at = ? WHERE run_id = ? AND {allowed} "
                f"RETURNING {RUN_COLUMNS}",
                (*values, now, run_id),
            )
            if row is None:
                yield from _require_run(run_id)
                return None
            kind, detail = hold_event(reason, via)
            yield from audit.append(kind, at=self._clock(), actor=actor, run_id=run_id,
                                    detail=detail)  # fmt: skip
            return row_to_run(row)

        return await self._db.transact(body)

    async def load_run_state(self, run_id: str) -> str:
        row = await self._db.read_one(
            "SELECT r.state_version, r.schema_version, r.blob_digest, r.purged_at, "
            "b.key_id, CAST(b.nonce AS BLOB) AS nonce, CAST(b.ciphertext AS BLOB) AS ciphertext "
            "FROM runs r LEFT JOIN run_blobs b ON b.run_id = r.run_id WHERE r.run_id = ?",
            (run_id,),
        )
        if row is None:
            raise InputError(f"no run {run_id!r}")
        if row["purged_at"] is not None:
            raise purged_state(run_id, row["purged_at"])
        sealed = None
        if row["ciphertext"] is not None:
            sealed = Sealed(key_id=row["key_id"], nonce=row["nonce"], ciphertext=row["ciphertext"])
        return await open_state(
            self._sealer, run_id, sealed, state_version=int(row["state_version"]),
            schema_version=row["schema_version"], expected_digest=row["blob_digest"],
        )  # fmt: skip

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = await self._db.read_one(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        return None if row is None else row_to_run(row)

    async def find_run_by_thread(self, channel: str, thread_ts: str) -> RunRecord | None:
        row = await self._db.read_one(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE channel = ? AND thread_ts = ? "
            "ORDER BY created_at DESC LIMIT 1",
            (channel, thread_ts),
        )
        return None if row is None else row_to_run(row)

    async def set_run_thread(self, run_id: str, *, channel: str, thread_ts: str) -> None:
        now = to_db(self._clock())

        def body() -> Body[None]:
            rows = yield many(
                "UPDATE runs SET channel = ?, thread_ts = ?, updated_at = ? WHERE run_id = ? "
                "RETURNING run_id",
                (channel, thread_ts, now, run_id),
            )
            if not rows:
                raise InputError(f"no run {run_id!r}")

        await self._db.transact(body)

    async def list_runs(
        self,
        *,
        status: RunStatus | None = None,
        limit: int = 100,
        where: RunFilter | None = None,
        after: RunCursor | None = None,
    ) -> list[RunRecord]:
        clause, params = run_filter_sql(status, where or RunFilter(), after)
        rows = await self._db.read(
            f"SELECT {RUN_COLUMNS} FROM runs {clause} "
            "ORDER BY updated_at DESC, run_id DESC LIMIT ?",
            (*params, limit),
        )
        return [row_to_run(row) for row in rows]


def run_filter_sql(
    status: RunStatus | None, where: RunFilter, after: RunCursor | None
) -> tuple[str, list[object]]:
    """The WHERE clause (and its parameters) of a runs list, newest first after `after`."""
    if status is not None and where.status is not None and status != where.status:
        raise InputError(f"two statuses asked for: {status!r} and {where.status!r}")
    wanted = status or where.status
    if wanted is not None:
        check_run_status(wanted)
    clause, params = where_all(
        {
            "status = ?": wanted,
            "requester = ?": where.requester,
            "agent_name = ?": where.agent_name,
            "updated_at >= ?": to_db_optional(where.updated_since),
            "origin = ?": where.origin,
        }
    )
    if after is None:
        return clause, params
    keyset = "(updated_at < ? OR (updated_at = ? AND run_id < ?))"
    moment = to_db(after[0])
    joined = f"{clause} AND {keyset}" if clause else f"WHERE {keyset}"
    return joined, [*params, moment, moment, after[1]]


def _write_blob(run_id: str, sealed: Sealed, *, insert: bool) -> Body[None]:
    if insert:
        sql = "INSERT INTO run_blobs (key_id, nonce, ciphertext, run_id) VALUES (?, ?, ?, ?)"
    else:
        sql = "UPDATE run_blobs SET key_id = ?, nonce = ?, ciphertext = ? WHERE run_id = ?"
    yield run(sql, (sealed.key_id, sealed.nonce, sealed.ciphertext, run_id))


def _require_run(run_id: str) -> Body[Row]:
    row: Row | None = yield one("SELECT version, status FROM runs WHERE run_id = ?", (run_id,))
    if row is None:
        raise InputError(f"no run {run_id!r}")
    return row
