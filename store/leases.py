"""Run leases and request memory: the rules every engine shares.

A run being worked on (`running`, `resuming`) has a lease: its owner (a worker id), an
expiry the owner keeps pushing forward while it works (a heartbeat), and a fencing token
that moves on at every claim and every release. A claim from a working status succeeds
only when no other owner holds a live lease, so of several workers exactly one works on
a run, and another takes it over once the holder stopped renewing. A takeover is a
status transition (the run's version moves), so the old holder's `save_run_state`
loses its compare-and-set; its ledger claims and renewals name the token and are refused
once it moved (LeaseLostError). The SQL, shared by the engines, is store/sql/leases.py.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from bot.errors import InputError, LeaseLostError
from store.records import WORKING_RUN_STATUSES, RunLease, RunRecord
from store.rows import Row, from_db
from store.runs import check_status


def check_claim(*, new_status: str, owner: str, lease_seconds: float) -> None:
    """InputError naming what is wrong with a claim's arguments."""
    check_status(new_status)
    if new_status not in WORKING_RUN_STATUSES:
        raise InputError(
            f"a run is claimed to work on it ({', '.join(sorted(WORKING_RUN_STATUSES))}), "
            f"not to make it {new_status!r}"
        )
    if not owner.strip():
        raise InputError("a run lease needs an owner")
    check_seconds("lease_seconds", lease_seconds)


def check_release(new_status: str) -> None:
    check_status(new_status)
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
