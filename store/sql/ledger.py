"""The idempotency ledger: one `ledger` row per execution key, its rules and its SQL.

States: executing -> succeeded | failed_retryable | failed_terminal | uncertain.
(A claim is the runner's dispatch intent itself, so a row is born `executing`; the
journal protocol has no separate reserve step that a `reserved` state could record.)

Each row carries a lease (owner, expiry) and a `lease_version`, the fencing token handed
to the claimant. Every write names the token it holds; once the lease was taken over the
version has moved on and the stale holder's write changes nothing (LeaseLostError).

A claim, in one write transaction (`claim_step` decides, the transaction writes):
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

A claim inserts a new key with `ON CONFLICT DO NOTHING` and otherwise works on the row
read `FOR UPDATE`, so of two workers claiming one key at once (on Postgres, in two
processes) one makes it `executing` and the other sees its lease. Sealed results are read
with `CAST(... AS BLOB)` so that on SQLite a ciphertext rewritten as TEXT still reaches
the authentication check (and fails it) instead of failing somewhere else.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from bot.clock import Clock
from bot.errors import (
    ExecutionKeyConflict,
    InputError,
    LeaseHeldError,
    LeaseLostError,
    ResolutionError,
    UnknownCallError,
)
from bot.runtime.journal import Claim, Fresh, Interrupted, Recorded, Uncertain
from store.crypto import AadValue, Sealed, Sealer
from store.records import LedgerEntry
from store.rows import Row, from_db, row_to_ledger_entry, to_db, where_all
from store.sql.leases import lease_lost as run_lease_lost
from store.sql.leases import lease_row
from store.tx import Body, Database, many, one, run

RESULT_PURPOSE = "ledger-result"
LedgerState = Literal["succeeded", "failed_retryable", "failed_terminal"]
ClaimStep = Literal["recorded", "take_over", "uncertain", "interrupted"]
"""What a claim on an existing row does: reuse the recorded result, take the key over
under a new fencing token, report it uncertain, or report it interrupted."""


@dataclass(frozen=True, kw_only=True)
class Lease:
    """The lease a claim asks for: held by `owner` from `now` until `expires`."""

    owner: str
    now: datetime
    expires: datetime


def new_lease(*, execution_key: str, owner: str, lease_seconds: float, now: datetime) -> Lease:
    """The lease a claim on `execution_key` asks for; bad input is refused by name."""
    if not execution_key or not owner:
        raise InputError("a ledger claim needs an execution key and an owner")
    if lease_seconds <= 0:
        raise InputError(f"lease_seconds must be positive, not {lease_seconds}")
    return Lease(owner=owner, now=now, expires=now + timedelta(seconds=lease_seconds))


def claim_step(row: Row, *, arguments_digest: str, lease: Lease, redispatch: bool) -> ClaimStep:
    """What claiming the existing ledger row does (ExecutionKeyConflict when the key was
    recorded with other arguments, LeaseHeldError while another owner's lease is live)."""
    key, state = row["execution_key"], row["state"]
    if not hmac.compare_digest(row["arguments_digest"].encode(), arguments_digest.encode()):
        raise ExecutionKeyConflict(
            f"execution key {key!r} is recorded with other arguments "
            f"(digest {row['arguments_digest'][:12]}..., not {arguments_digest[:12]}...)"
        )
    if state in ("succeeded", "failed_terminal"):
        return "recorded"
    if state == "failed_retryable":
        return "take_over"
    if state == "uncertain":
        return "take_over" if redispatch else "uncertain"
    _refuse_live_lease(row, lease)
    return "take_over" if redispatch else "interrupted"


def _refuse_live_lease(row: Row, lease: Lease) -> None:
    owner, expires = row["lease_owner"], row["lease_expires_at"]
    if owner is None or owner == lease.owner or expires is None:
        return
    if from_db(expires) > lease.now:
        raise LeaseHeldError(
            f"execution key {row['execution_key']!r} is being executed by {owner} "
            f"(lease until {expires})"
        )


def result_state(*, is_error: bool, retryable: bool) -> LedgerState:
    """Where a recorded result leaves the key."""
    if not is_error:
        return "succeeded"
    return "failed_retryable" if retryable else "failed_terminal"


def result_fields(execution_key: str, lease_version: int) -> dict[str, AadValue]:
    """What a ledger result blob is bound to (with the purpose and the key id)."""
    return {"execution_key": execution_key, "lease_version": lease_version}


async def seal_result(
    sealer: Sealer, execution_key: str, *, lease_version: int, result: str
) -> Sealed:
    return await sealer.seal(
        result.encode("utf-8"),
        purpose=RESULT_PURPOSE,
        fields=result_fields(execution_key, lease_version),
    )


async def open_result(
    sealer: Sealer, execution_key: str, sealed: Sealed, *, lease_version: int, run_id: str
) -> str:
    plaintext = await sealer.open(
        sealed,
        purpose=RESULT_PURPOSE,
        fields=result_fields(execution_key, lease_version),
        run_id=run_id,
    )
    return plaintext.decode("utf-8")


def unknown_key(execution_key: str) -> UnknownCallError:
    return UnknownCallError(f"no ledger entry for execution key {execution_key!r}")


def lease_lost(execution_key: str, lease_token: int, now: Row | None) -> LeaseLostError:
    """A result written under a token that is no longer the row's (`now`: its state and
    lease_version, None when the key is gone)."""
    if now is None:
        return LeaseLostError(f"no ledger entry for execution key {execution_key!r}")
    return LeaseLostError(
        f"lease {lease_token} on execution key {execution_key!r} is no longer ours "
        f"(now {now['state']} under lease {now['lease_version']}); nothing was written"
    )


def taken_over(execution_key: str, owner: str) -> LeaseHeldError:
    """mark_uncertain found another owner's live lease: that owner took the key over."""
    return LeaseHeldError(
        f"execution key {execution_key!r} was taken over by {owner}; it is not uncertain"
    )


def not_resolvable(execution_key: str, now: Row) -> ResolutionError:
    """A verified result for a key that is neither uncertain nor interrupted."""
    return ResolutionError(
        f"execution key {execution_key!r} is {now['state']} "
        f"(lease version {now['lease_version']}); it cannot take a verified result"
    )


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

    def __init__(self, database: Database, sealer: Sealer, clock: Clock) -> None:
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
