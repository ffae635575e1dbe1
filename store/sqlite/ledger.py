"""The idempotency ledger: the runner's durable journal, one row per execution key.

States: executing -> succeeded | failed_retryable | failed_terminal | uncertain.
(A claim is the runner's dispatch intent itself, so a row is born `executing`; the
journal protocol has no separate reserve step that a `reserved` state could record.)

Each row carries a lease (owner, expiry) and a `lease_version`, the fencing token handed
to the claimant. Every write names the token it holds; once the lease was taken over the
version has moved on and the stale holder's write changes nothing (LeaseLostError).

claim, in one BEGIN IMMEDIATE transaction:
- new key -> row `executing`, Fresh(lease_token, attempt 1);
- same key, other arguments digest -> ExecutionKeyConflict;
- succeeded / failed_terminal -> Recorded (the stored result, reused, never re-run);
- failed_retryable -> Fresh with the next attempt (the tool said running again is safe);
- executing under another owner's live lease -> LeaseHeldError;
- executing with the lease run out (or our own) -> Interrupted, or with `redispatch`
  a takeover: Fresh with the next attempt and a new fencing token;
- uncertain -> Uncertain, or with `redispatch` a takeover as above.

Results are sealed with AES-GCM like run states (a tool result may carry anything the
state carries), bound to the execution key and the lease version that wrote them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.errors import (
    ExecutionKeyConflict,
    InputError,
    LeaseHeldError,
    LeaseLostError,
    ResolutionError,
    UnknownCallError,
)
from bot.runtime.journal import Claim, Fresh, Interrupted, Recorded, Uncertain
from store.crypto import Sealed
from store.sqlite.base import StoreBase
from store.sqlite.connection import fetch_all, fetch_one, where_all
from store.sqlite.timefmt import from_db, to_db

RESULT_PURPOSE = "ledger-result"
LEDGER_COLUMNS = (
    "execution_key, arguments_digest, run_id, tool_call_id, tool_name, state, attempt, "
    "lease_owner, lease_expires_at, lease_version, result_key_id, "
    "CAST(result_nonce AS BLOB) AS result_nonce, "
    "CAST(result_ciphertext AS BLOB) AS result_ciphertext, is_error, created_at, updated_at"
)


@dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    """One ledger row as operators see it (the result stays sealed)."""

    execution_key: str
    run_id: str
    tool_call_id: str
    tool_name: str
    state: str
    attempt: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    lease_version: int
    updated_at: datetime


def result_aad(execution_key: str, lease_version: int) -> dict[str, str | int]:
    return {"execution_key": execution_key, "lease_version": lease_version}


class LedgerPart(StoreBase):
    async def ledger_claim(
        self,
        *,
        execution_key: str,
        arguments_digest: str,
        run_id: str,
        tool_call_id: str,
        tool_name: str,
        owner: str,
        lease_seconds: float,
        redispatch: bool = False,
    ) -> Claim:
        if not execution_key or not owner:
            raise InputError("a ledger claim needs an execution key and an owner")
        if lease_seconds <= 0:
            raise InputError(f"lease_seconds must be positive, not {lease_seconds}")
        now = self._now()
        lease = _Lease(owner=owner, now=now, expires=now + timedelta(seconds=lease_seconds))

        def body(connection: sqlite3.Connection) -> Claim | _SealedResult:
            row = fetch_one(
                connection, f"SELECT {LEDGER_COLUMNS} FROM ledger WHERE execution_key = ?",
                (execution_key,),
            )  # fmt: skip
            if row is None:
                connection.execute(
                    "INSERT INTO ledger (execution_key, arguments_digest, run_id, tool_call_id, "
                    "tool_name, state, attempt, lease_owner, lease_expires_at, lease_version, "
                    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'executing', 1, ?, ?, 1, ?, ?)",
                    (execution_key, arguments_digest, run_id, tool_call_id, tool_name,
                     owner, to_db(lease.expires), to_db(now), to_db(now)),
                )  # fmt: skip
                return Fresh(lease_token=1, attempt=1)
            return _claim_existing(connection, row, arguments_digest, lease, redispatch)

        outcome = await self._db.transaction(body)
        if isinstance(outcome, _SealedResult):
            return Recorded(result=await self._open_result(outcome), is_error=outcome.is_error)
        return outcome

    async def ledger_record_result(
        self,
        *,
        execution_key: str,
        lease_token: int,
        result: str,
        is_error: bool,
        retryable: bool = False,
    ) -> None:
        """Store the raw result under our fencing token. `retryable` (an error the tool
        reports as safe to run again) makes the next claim Fresh instead of Recorded."""
        state = (
            "succeeded" if not is_error else "failed_retryable" if retryable else "failed_terminal"
        )
        sealed = await self._seal(
            result.encode("utf-8"),
            purpose=RESULT_PURPOSE,
            fields=result_aad(execution_key, lease_token),
        )
        now = to_db(self._now())

        def body(connection: sqlite3.Connection) -> None:
            rows = fetch_all(
                connection,
                "UPDATE ledger SET state = ?, result_key_id = ?, result_nonce = ?, "
                "result_ciphertext = ?, is_error = ?, lease_owner = NULL, "
                "lease_expires_at = NULL, updated_at = ? "
                "WHERE execution_key = ? AND lease_version = ? AND state = 'executing' "
                "RETURNING execution_key",
                (state, sealed.key_id, sealed.nonce, sealed.ciphertext, int(is_error), now,
                 execution_key, lease_token),
            )  # fmt: skip
            if not rows:
                raise _lease_lost(connection, execution_key, lease_token)

        await self._db.transaction(body)

    async def ledger_mark_uncertain(self, *, execution_key: str, owner: str | None = None) -> None:
        """executing -> uncertain; the fencing token moves on, so a holder that is still
        running cannot write a result over the human's reconciliation. A key whose result
        is recorded is not uncertain and stays as it is.

        With `owner` (what StoreJournal passes), a live lease held by another owner is
        left alone (LeaseHeldError): between our Interrupted claim and this call another
        worker may have taken the key over, and its run must not be fenced off."""
        now = to_db(self._now())

        def body(connection: sqlite3.Connection) -> None:
            rows = fetch_all(
                connection,
                "UPDATE ledger SET state = 'uncertain', lease_version = lease_version + 1, "
                "lease_owner = NULL, lease_expires_at = NULL, updated_at = ? "
                "WHERE execution_key = ? AND state = 'executing' AND (? IS NULL "
                "OR lease_owner IS NULL OR lease_owner = ? OR lease_expires_at <= ?) "
                "RETURNING execution_key",
                (now, execution_key, owner, owner, now),
            )
            if rows:
                return
            row = _require_entry(connection, execution_key)
            if row["state"] == "executing":
                raise LeaseHeldError(
                    f"execution key {execution_key!r} was taken over by "
                    f"{row['lease_owner']}; it is not uncertain"
                )

        await self._db.transaction(body)

    async def ledger_resolve_with_result(self, *, execution_key: str, result: str) -> None:
        """A human verified the outcome: uncertain (or interrupted) -> succeeded."""
        current = await self._db.read_one(
            "SELECT lease_version FROM ledger WHERE execution_key = ?", (execution_key,)
        )
        if current is None:
            raise UnknownCallError(f"no ledger entry for execution key {execution_key!r}")
        version = int(current["lease_version"]) + 1
        sealed = await self._seal(
            result.encode("utf-8"),
            purpose=RESULT_PURPOSE,
            fields=result_aad(execution_key, version),
        )
        now = to_db(self._now())

        def body(connection: sqlite3.Connection) -> None:
            rows = fetch_all(
                connection,
                "UPDATE ledger SET state = 'succeeded', lease_version = ?, result_key_id = ?, "
                "result_nonce = ?, result_ciphertext = ?, is_error = 0, lease_owner = NULL, "
                "lease_expires_at = NULL, updated_at = ? WHERE execution_key = ? "
                "AND lease_version = ? AND state IN ('uncertain', 'executing') "
                "RETURNING execution_key",
                (version, sealed.key_id, sealed.nonce, sealed.ciphertext, now, execution_key,
                 version - 1),
            )  # fmt: skip
            if not rows:
                row = _require_entry(connection, execution_key)
                raise ResolutionError(
                    f"execution key {execution_key!r} is {row['state']} "
                    f"(lease version {row['lease_version']}); it cannot take a verified result"
                )

        await self._db.transaction(body)

    async def ledger_entries(
        self, *, run_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[LedgerEntry]:
        where, params = where_all({"run_id = ?": run_id, "state = ?": state})
        rows = await self._db.read(
            f"SELECT {LEDGER_COLUMNS} FROM ledger {where} ORDER BY created_at LIMIT ?",
            (*params, limit),
        )
        return [_row_to_entry(row) for row in rows]

    async def _open_result(self, found: _SealedResult) -> str:
        plaintext = await self._unseal(
            found.sealed,
            purpose=RESULT_PURPOSE,
            fields=result_aad(found.execution_key, found.lease_version),
            run_id=found.run_id,
        )
        return plaintext.decode("utf-8")


@dataclass(frozen=True, kw_only=True)
class _Lease:
    owner: str
    now: datetime
    expires: datetime


@dataclass(frozen=True, kw_only=True)
class _SealedResult:
    """A recorded result read inside the claim transaction, decrypted after it."""

    execution_key: str
    run_id: str
    lease_version: int
    sealed: Sealed
    is_error: bool


def _claim_existing(
    connection: sqlite3.Connection,
    row: sqlite3.Row,
    arguments_digest: str,
    lease: _Lease,
    redispatch: bool,
) -> Claim | _SealedResult:
    key, state = row["execution_key"], row["state"]
    if row["arguments_digest"] != arguments_digest:
        raise ExecutionKeyConflict(
            f"execution key {key!r} is recorded with other arguments "
            f"(digest {row['arguments_digest'][:12]}..., not {arguments_digest[:12]}...)"
        )
    if state in ("succeeded", "failed_terminal"):
        return _SealedResult(
            execution_key=key,
            run_id=row["run_id"],
            lease_version=int(row["lease_version"]),
            sealed=Sealed(
                key_id=row["result_key_id"],
                nonce=row["result_nonce"],
                ciphertext=row["result_ciphertext"],
            ),
            is_error=bool(row["is_error"]),
        )
    if state == "failed_retryable":
        return _take_over(connection, row, lease)
    if state == "uncertain":
        return _take_over(connection, row, lease) if redispatch else Uncertain()
    _refuse_live_lease(row, lease)
    if redispatch:
        return _take_over(connection, row, lease)
    return Interrupted(attempt=int(row["attempt"]))


def _refuse_live_lease(row: sqlite3.Row, lease: _Lease) -> None:
    owner, expires = row["lease_owner"], row["lease_expires_at"]
    if owner is None or owner == lease.owner or expires is None:
        return
    if from_db(expires) > lease.now:
        raise LeaseHeldError(
            f"execution key {row['execution_key']!r} is being executed by {owner} "
            f"(lease until {expires})"
        )


def _take_over(connection: sqlite3.Connection, row: sqlite3.Row, lease: _Lease) -> Fresh:
    version, attempt = int(row["lease_version"]) + 1, int(row["attempt"]) + 1
    connection.execute(
        "UPDATE ledger SET state = 'executing', attempt = ?, lease_owner = ?, "
        "lease_expires_at = ?, lease_version = ?, result_key_id = NULL, result_nonce = NULL, "
        "result_ciphertext = NULL, is_error = 0, updated_at = ? "
        "WHERE execution_key = ? AND lease_version = ?",
        (attempt, lease.owner, to_db(lease.expires), version, to_db(lease.now),
         row["execution_key"], row["lease_version"]),
    )  # fmt: skip
    return Fresh(lease_token=version, attempt=attempt)


def _require_entry(connection: sqlite3.Connection, execution_key: str) -> sqlite3.Row:
    row = fetch_one(
        connection,
        "SELECT state, lease_version, lease_owner FROM ledger WHERE execution_key = ?",
        (execution_key,),
    )  # fmt: skip
    if row is None:
        raise UnknownCallError(f"no ledger entry for execution key {execution_key!r}")
    return row


def _lease_lost(
    connection: sqlite3.Connection, execution_key: str, lease_token: int
) -> LeaseLostError:
    row = fetch_one(
        connection, "SELECT state, lease_version FROM ledger WHERE execution_key = ?",
        (execution_key,),
    )  # fmt: skip
    if row is None:
        return LeaseLostError(f"no ledger entry for execution key {execution_key!r}")
    return LeaseLostError(
        f"lease {lease_token} on execution key {execution_key!r} is no longer ours "
        f"(now {row['state']} under lease {row['lease_version']}); nothing was written"
    )


def _row_to_entry(row: sqlite3.Row) -> LedgerEntry:
    expires = row["lease_expires_at"]
    return LedgerEntry(
        execution_key=row["execution_key"],
        run_id=row["run_id"],
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        state=row["state"],
        attempt=int(row["attempt"]),
        lease_owner=row["lease_owner"],
        lease_expires_at=None if expires is None else from_db(expires),
        lease_version=int(row["lease_version"]),
        updated_at=from_db(row["updated_at"]),
    )
