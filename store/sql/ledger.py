"""The idempotency ledger: one `ledger` row per execution key.

The states, the fencing token and what a claim does to each state are in store.ledger
(`claim_step` decides, the transaction here writes). A claim inserts a new key with
`ON CONFLICT DO NOTHING` and otherwise works on the row read `FOR UPDATE`, so of two
workers claiming one key at once (on Postgres, in two processes) one makes it `executing`
and the other sees its lease. Sealed results are read with `CAST(... AS BLOB)` so that on
SQLite a ciphertext rewritten as TEXT still reaches the authentication check (and fails
it) instead of failing somewhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.clock import Clock
from bot.runtime.journal import Claim, Fresh, Interrupted, Recorded, Uncertain
from store.crypto import Sealed, Sealer
from store.leases import lease_lost as run_lease_lost
from store.ledger import (
    Lease,
    claim_step,
    lease_lost,
    new_lease,
    not_resolvable,
    open_result,
    result_state,
    seal_result,
    taken_over,
    unknown_key,
)
from store.records import LedgerEntry
from store.rows import Row, row_to_ledger_entry, to_db, where_all
from store.sql.leases import lease_row
from store.tx import Body, Engine, many, one, run

LEDGER_COLUMNS = (
    "execution_key, arguments_digest, run_id, tool_call_id, tool_name, state, attempt, "
    "lease_owner, lease_expires_at, lease_version, result_key_id, "
    "CAST(result_nonce AS BLOB) AS result_nonce, "
    "CAST(result_ciphertext AS BLOB) AS result_ciphertext, is_error, created_at, updated_at"
)
LOCK_ENTRY = f"SELECT {LEDGER_COLUMNS} FROM ledger WHERE execution_key = ? FOR UPDATE"


@dataclass(frozen=True, kw_only=True)
class _SealedResult:
    """A recorded result read inside the claim transaction, opened after it."""

    execution_key: str
    run_id: str
    lease_version: int
    sealed: Sealed
    is_error: bool


class Ledger:
    """The LedgerStore."""

    def __init__(self, database: Engine, sealer: Sealer, clock: Clock) -> None:
        self._db = database
        self._sealer = sealer
        self._clock = clock

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
        run_lease_token: int | None = None,
    ) -> Claim:
        lease = new_lease(
            execution_key=execution_key, owner=owner, lease_seconds=lease_seconds,
            now=self._clock(),
        )  # fmt: skip

        def body() -> Body[Claim | _SealedResult]:
            if run_lease_token is not None:
                yield from _check_run_lease(run_id, owner, run_lease_token)
            row = yield one(LOCK_ENTRY, (execution_key,))
            if row is None:
                inserted = yield one(
                    "INSERT INTO ledger (execution_key, arguments_digest, run_id, tool_call_id, "
                    "tool_name, state, attempt, lease_owner, lease_expires_at, lease_version, "
                    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'executing', 1, ?, ?, 1, ?, ?) "
                    "ON CONFLICT (execution_key) DO NOTHING RETURNING execution_key",
                    (execution_key, arguments_digest, run_id, tool_call_id, tool_name,
                     owner, to_db(lease.expires), to_db(lease.now), to_db(lease.now)),
                )  # fmt: skip
                if inserted is not None:
                    return Fresh(lease_token=1, attempt=1)
                row = yield one(LOCK_ENTRY, (execution_key,))  # claimed meanwhile
            step = claim_step(
                row, arguments_digest=arguments_digest, lease=lease, redispatch=redispatch
            )
            if step == "recorded":
                return _recorded(row)
            if step == "take_over":
                return (yield from _take_over(row, lease))
            if step == "uncertain":
                return Uncertain()
            return Interrupted(attempt=int(row["attempt"]))

        outcome = await self._db.transact(body)
        if isinstance(outcome, _SealedResult):
            result = await open_result(
                self._sealer, outcome.execution_key, outcome.sealed,
                lease_version=outcome.lease_version, run_id=outcome.run_id,
            )  # fmt: skip
            return Recorded(result=result, is_error=outcome.is_error)
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
        state = result_state(is_error=is_error, retryable=retryable)
        sealed = await seal_result(
            self._sealer, execution_key, lease_version=lease_token, result=result
        )
        now = to_db(self._clock())

        def body() -> Body[None]:
            rows = yield many(
                "UPDATE ledger SET state = ?, result_key_id = ?, result_nonce = ?, "
                "result_ciphertext = ?, is_error = ?, lease_owner = NULL, "
                "lease_expires_at = NULL, updated_at = ? "
                "WHERE execution_key = ? AND lease_version = ? AND state = 'executing' "
                "RETURNING execution_key",
                (state, sealed.key_id, sealed.nonce, sealed.ciphertext, int(is_error), now,
                 execution_key, lease_token),
            )  # fmt: skip
            if not rows:
                found = yield from _entry_state(execution_key)
                raise lease_lost(execution_key, lease_token, found)

        await self._db.transact(body)

    async def ledger_mark_uncertain(self, *, execution_key: str, owner: str | None = None) -> None:
        """executing -> uncertain; the fencing token moves on, so a holder that is still
        running cannot write a result over the human's reconciliation. A key whose result
        is recorded is not uncertain and stays as it is.

        With `owner` (what StoreJournal passes), a live lease held by another owner is
        left alone (LeaseHeldError): between our Interrupted claim and this call another
        worker may have taken the key over, and its run must not be fenced off."""
        now = to_db(self._clock())

        def body() -> Body[None]:
            rows = yield many(
                "UPDATE ledger SET state = 'uncertain', lease_version = lease_version + 1, "
                "lease_owner = NULL, lease_expires_at = NULL, updated_at = ? "
                "WHERE execution_key = ? AND state = 'executing' AND (CAST(? AS TEXT) IS NULL "
                "OR lease_owner IS NULL OR lease_owner = ? OR lease_expires_at <= ?) "
                "RETURNING execution_key",
                (now, execution_key, owner, owner, now),
            )
            if rows:
                return
            row = yield from _require_entry(execution_key)
            if row["state"] == "executing":
                raise taken_over(execution_key, row["lease_owner"])

        await self._db.transact(body)

    async def ledger_resolve_with_result(self, *, execution_key: str, result: str) -> None:
        current = await self._db.read_one(
            "SELECT lease_version FROM ledger WHERE execution_key = ?", (execution_key,)
        )
        if current is None:
            raise unknown_key(execution_key)
        version = int(current["lease_version"]) + 1
        sealed = await seal_result(
            self._sealer, execution_key, lease_version=version, result=result
        )
        now = to_db(self._clock())

        def body() -> Body[None]:
            rows = yield many(
                "UPDATE ledger SET state = 'succeeded', lease_version = ?, result_key_id = ?, "
                "result_nonce = ?, result_ciphertext = ?, is_error = 0, lease_owner = NULL, "
                "lease_expires_at = NULL, updated_at = ? WHERE execution_key = ? "
                "AND lease_version = ? AND state IN ('uncertain', 'executing') "
                "RETURNING execution_key",
                (version, sealed.key_id, sealed.nonce, sealed.ciphertext, now, execution_key,
                 version - 1),
            )  # fmt: skip
            if not rows:
                found = yield from _require_entry(execution_key)
                raise not_resolvable(execution_key, found)

        await self._db.transact(body)

    async def ledger_entries(
        self, *, run_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[LedgerEntry]:
        where, params = where_all({"run_id = ?": run_id, "state = ?": state})
        rows = await self._db.read(
            f"SELECT {LEDGER_COLUMNS} FROM ledger {where} ORDER BY created_at LIMIT ?",
            (*params, limit),
        )
        return [row_to_ledger_entry(row) for row in rows]


def _recorded(row: Row) -> _SealedResult:
    return _SealedResult(
        execution_key=row["execution_key"],
        run_id=row["run_id"],
        lease_version=int(row["lease_version"]),
        sealed=Sealed(
            key_id=row["result_key_id"],
            nonce=row["result_nonce"],
            ciphertext=row["result_ciphertext"],
        ),
        is_error=bool(row["is_error"]),
    )


def _take_over(row: Row, lease: Lease) -> Body[Fresh]:
    version, attempt = int(row["lease_version"]) + 1, int(row["attempt"]) + 1
    yield run(
        "UPDATE ledger SET state = 'executing', attempt = ?, lease_owner = ?, "
        "lease_expires_at = ?, lease_version = ?, result_key_id = NULL, result_nonce = NULL, "
        "result_ciphertext = NULL, is_error = 0, updated_at = ? "
        "WHERE execution_key = ? AND lease_version = ?",
        (attempt, lease.owner, to_db(lease.expires), version, to_db(lease.now),
         row["execution_key"], row["lease_version"]),
    )  # fmt: skip
    return Fresh(lease_token=version, attempt=attempt)


def _check_run_lease(run_id: str, owner: str, token: int) -> Body[None]:
    """LeaseLostError unless `owner` holds the run's lease under `token` (fencing). The
    lease row stays locked to the end of the claim, so a takeover waits for it."""
    held = yield from lease_row(run_id, lock=True)
    if held is None or held["owner"] != owner or int(held["token"]) != token:
        raise run_lease_lost(run_id, token, held)


def _entry_state(execution_key: str) -> Body[Row | None]:
    row: Row | None = yield one(
        "SELECT state, lease_version, lease_owner FROM ledger WHERE execution_key = ?",
        (execution_key,),
    )
    return row


def _require_entry(execution_key: str) -> Body[Row]:
    row = yield from _entry_state(execution_key)
    if row is None:
        raise unknown_key(execution_key)
    return row
