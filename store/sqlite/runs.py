"""Runs: a small row for status and compare-and-set, the sealed state in `run_blobs`.

The blob's associated data binds it to its run id, the run version at which it was
written (`state_version`), its schema version and key id: a blob moved to another run, or
an older blob of the same run put back, fails to decrypt. The plaintext's SHA-256 is kept
on the run row and checked again after decryption.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import get_args

from bot.errors import ConflictError, InputError, TamperError
from bot.off_loop import off_loop_if_large
from store.api import RunRecord, RunStatus
from store.crypto import Sealed
from store.sqlite.base import StoreBase
from store.sqlite.connection import fetch_all, fetch_one
from store.sqlite.rows import RUN_COLUMNS, row_to_run
from store.sqlite.timefmt import to_db

STATE_PURPOSE = "run-state"
RUN_STATUSES: frozenset[str] = frozenset(get_args(RunStatus))


def state_aad(run_id: str, state_version: int, schema_version: str) -> dict[str, str | int]:
    return {"run_id": run_id, "state_version": state_version, "schema_version": schema_version}


def _check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise InputError(f"run status {status!r} is not one of {sorted(RUN_STATUSES)}")


class RunsPart(StoreBase):
    async def _seal_state(
        self, run_id: str, *, state_version: int, schema_version: str, state_json: str
    ) -> tuple[Sealed, str]:
        plaintext = await off_loop_if_large(len(state_json), lambda: state_json.encode("utf-8"))
        digest = await off_loop_if_large(
            len(plaintext), lambda: hashlib.sha256(plaintext).hexdigest()
        )
        sealed = await self._seal(
            plaintext,
            purpose=STATE_PURPOSE,
            fields=state_aad(run_id, state_version, schema_version),
        )
        return sealed, digest

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
    ) -> RunRecord:
        _check_status(status)
        if not run_id:
            raise InputError("run id is empty")
        sealed, digest = await self._seal_state(
            run_id, state_version=1, schema_version=schema_version, state_json=state_json
        )
        now = to_db(self._now())

        def body(connection: sqlite3.Connection) -> RunRecord:
            try:
                row = fetch_one(
                    connection,
                    "INSERT INTO runs (run_id, agent_name, agent_version, schema_version, "
                    "status, version, state_version, key_id, blob_digest, channel, thread_ts, "
                    "requester, created_at, updated_at) "
                    f"VALUES (?, ?, ?, ?, ?, 1, 1, ?, ?, ?, ?, ?, ?, ?) RETURNING {RUN_COLUMNS}",
                    (run_id, agent_name, agent_version, schema_version, status, sealed.key_id,
                     digest, channel, thread_ts, requester, now, now),
                )  # fmt: skip
            except sqlite3.IntegrityError:
                raise ConflictError(f"run {run_id!r} already exists") from None
            _write_blob(connection, run_id, sealed, insert=True)
            assert row is not None
            return row_to_run(row)

        return await self._db.transaction(body)

    async def save_run_state(
        self,
        run_id: str,
        *,
        expected_version: int,
        state_json: str,
        status: RunStatus,
        schema_version: str,
    ) -> RunRecord:
        _check_status(status)
        sealed, digest = await self._seal_state(
            run_id,
            state_version=expected_version + 1,
            schema_version=schema_version,
            state_json=state_json,
        )
        now = to_db(self._now())

        def body(connection: sqlite3.Connection) -> RunRecord:
            row = fetch_one(
                connection,
                "UPDATE runs SET status = ?, version = version + 1, state_version = version + 1, "
                "schema_version = ?, key_id = ?, blob_digest = ?, updated_at = ? "
                f"WHERE run_id = ? AND version = ? RETURNING {RUN_COLUMNS}",
                (status, schema_version, sealed.key_id, digest, now, run_id, expected_version),
            )
            if row is None:
                raise _version_conflict(connection, run_id, expected_version)
            _write_blob(connection, run_id, sealed, insert=False)
            return row_to_run(row)

        return await self._db.transaction(body)

    async def transition_run(
        self, run_id: str, *, expected_status: RunStatus, new_status: RunStatus
    ) -> RunRecord | None:
        _check_status(expected_status)
        _check_status(new_status)
        now = to_db(self._now())

        def body(connection: sqlite3.Connection) -> RunRecord | None:
            row = fetch_one(
                connection,
                "UPDATE runs SET status = ?, version = version + 1, updated_at = ? "
                f"WHERE run_id = ? AND status = ? RETURNING {RUN_COLUMNS}",
                (new_status, now, run_id, expected_status),
            )
            if row is None:
                _require_run(connection, run_id)
                return None
            return row_to_run(row)

        return await self._db.transaction(body)

    async def load_run_state(self, run_id: str) -> str:
        row = await self._db.read_one(
            "SELECT r.state_version, r.schema_version, r.blob_digest, "
            "b.key_id, CAST(b.nonce AS BLOB) AS nonce, CAST(b.ciphertext AS BLOB) AS ciphertext "
            "FROM runs r LEFT JOIN run_blobs b ON b.run_id = r.run_id WHERE r.run_id = ?",
            (run_id,),
        )
        if row is None:
            raise InputError(f"no run {run_id!r}")
        if row["ciphertext"] is None:
            error = TamperError(f"run-state blob (run_id={run_id}) is missing")
            raise await self._tampered(error, run_id=run_id, detail={"purpose": STATE_PURPOSE})
        sealed = Sealed(key_id=row["key_id"], nonce=row["nonce"], ciphertext=row["ciphertext"])
        fields = state_aad(run_id, int(row["state_version"]), row["schema_version"])
        plaintext = await self._unseal(sealed, purpose=STATE_PURPOSE, fields=fields, run_id=run_id)
        return await self._check_plaintext(run_id, plaintext, expected_digest=row["blob_digest"])

    async def _check_plaintext(self, run_id: str, plaintext: bytes, *, expected_digest: str) -> str:
        digest = await off_loop_if_large(
            len(plaintext), lambda: hashlib.sha256(plaintext).hexdigest()
        )
        problem = None
        if digest != expected_digest:
            problem = "decrypted but its SHA-256 does not match the run's blob digest"
        else:
            try:
                return await off_loop_if_large(len(plaintext), lambda: plaintext.decode("utf-8"))
            except UnicodeDecodeError:
                problem = "is not UTF-8 text"
        error = TamperError(f"run-state blob (run_id={run_id}) {problem}")
        raise await self._tampered(error, run_id=run_id, detail={"purpose": STATE_PURPOSE})

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
        now = to_db(self._now())

        def body(connection: sqlite3.Connection) -> None:
            rows = fetch_all(
                connection,
                "UPDATE runs SET channel = ?, thread_ts = ?, updated_at = ? WHERE run_id = ? "
                "RETURNING run_id",
                (channel, thread_ts, now, run_id),
            )
            if not rows:
                raise InputError(f"no run {run_id!r}")

        await self._db.transaction(body)

    async def list_runs(
        self, *, status: RunStatus | None = None, limit: int = 100
    ) -> list[RunRecord]:
        if status is not None:
            _check_status(status)
            rows = await self._db.read(
                f"SELECT {RUN_COLUMNS} FROM runs WHERE status = ? "
                "ORDER BY updated_at DESC, run_id LIMIT ?",
                (status, limit),
            )
        else:
            rows = await self._db.read(
                f"SELECT {RUN_COLUMNS} FROM runs ORDER BY updated_at DESC, run_id LIMIT ?",
                (limit,),
            )
        return [row_to_run(row) for row in rows]


def _write_blob(
    connection: sqlite3.Connection, run_id: str, sealed: Sealed, *, insert: bool
) -> None:
    if insert:
        sql = "INSERT INTO run_blobs (key_id, nonce, ciphertext, run_id) VALUES (?, ?, ?, ?)"
    else:
        sql = "UPDATE run_blobs SET key_id = ?, nonce = ?, ciphertext = ? WHERE run_id = ?"
    connection.execute(sql, (sealed.key_id, sealed.nonce, sealed.ciphertext, run_id))


def _require_run(connection: sqlite3.Connection, run_id: str) -> sqlite3.Row:
    row = fetch_one(connection, "SELECT version, status FROM runs WHERE run_id = ?", (run_id,))
    if row is None:
        raise InputError(f"no run {run_id!r}")
    return row


def _version_conflict(
    connection: sqlite3.Connection, run_id: str, expected_version: int
) -> ConflictError:
    row = _require_run(connection, run_id)
    return ConflictError(
        f"run {run_id!r} is at version {row['version']} ({row['status']}), "
        f"not the expected version {expected_version}"
    )
