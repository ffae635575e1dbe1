"""The idempotency ledger's rules, for every engine: one row per execution key.

States: executing -> succeeded | failed_retryable | failed_terminal | uncertain.
(A claim is the runner's dispatch intent itself, so a row is born `executing`; the
journal protocol has no separate reserve step that a `reserved` state could record.)

Each row carries a lease (owner, expiry) and a `lease_version`, the fencing token handed
to the claimant. Every write names the token it holds; once the lease was taken over the
version has moved on and the stale holder's write changes nothing (LeaseLostError).

A claim, in one write transaction (`claim_step` decides, the engine writes):
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
The SQL is the engine's (store/sqlite/ledger.py).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from bot.errors import (
    ExecutionKeyConflict,
    InputError,
    LeaseHeldError,
    LeaseLostError,
    ResolutionError,
    UnknownCallError,
)
from store.crypto import AadValue, Sealed, Sealer
from store.rows import Row, from_db

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
