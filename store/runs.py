"""Run rules every engine shares: the statuses a run may take, and its sealed state.

The state blob's associated data binds it to its run id, the run version at which it was
written (`state_version`), its schema version and key id: a blob moved to another run, or
an older blob of the same run put back, fails to open. The plaintext's SHA-256 is kept
on the run row and checked again after opening. The SQL is the engine's
(store/sqlite/runs.py).
"""

from __future__ import annotations

import hashlib
from typing import Any, get_args

from bot.errors import ConflictError, InputError, RunStateError, TamperError
from bot.off_loop import off_loop_if_large
from store.crypto import AadValue, Sealed, Sealer
from store.records import TASK_SUMMARY_CHARS, EngineStamp, RunOrigin, RunStatus

STATE_PURPOSE = "run-state"
RUN_STATUSES: frozenset[str] = frozenset(get_args(RunStatus))
RUN_ORIGINS: frozenset[str] = frozenset(get_args(RunOrigin))
CANCELLABLE_STATUSES: frozenset[str] = frozenset({"running", "paused", "resuming"})


def check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise InputError(f"run status {status!r} is not one of {sorted(RUN_STATUSES)}")


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


def check_cancel(*, actor: str, reason: str) -> None:
    if not actor.strip():
        raise InputError("a cancellation needs the actor's id")
    if not reason.strip():
        raise InputError("say why the run is cancelled")


def purged_state(run_id: str, purged_at: str) -> RunStateError:
    """The error for reading the state of a run retention has purged."""
    return RunStateError(
        f"run {run_id} finished and its state was purged at {purged_at} (retention); "
        "its audit trail and approvals remain"
    )


def state_fields(run_id: str, state_version: int, schema_version: str) -> dict[str, AadValue]:
    """What a run's state blob is bound to (with the purpose and the key id)."""
    return {"run_id": run_id, "state_version": state_version, "schema_version": schema_version}


async def seal_state(
    sealer: Sealer, run_id: str, *, state_version: int, schema_version: str, state_json: str
) -> tuple[Sealed, str]:
    """The sealed blob of `state_json` and the SHA-256 hex of its plaintext."""
    plaintext = await off_loop_if_large(len(state_json), lambda: state_json.encode("utf-8"))
    digest = await off_loop_if_large(len(plaintext), lambda: hashlib.sha256(plaintext).hexdigest())
    sealed = await sealer.seal(
        plaintext,
        purpose=STATE_PURPOSE,
        fields=state_fields(run_id, state_version, schema_version),
    )
    return sealed, digest


async def open_state(
    sealer: Sealer,
    run_id: str,
    sealed: Sealed | None,
    *,
    state_version: int,
    schema_version: str,
    expected_digest: str,
) -> str:
    """The state JSON, or TamperError (audited) when the blob is missing, does not open,
    does not match the row's digest, or is not UTF-8."""
    if sealed is None:
        raise await _tampered(sealer, run_id, "is missing")
    fields = state_fields(run_id, state_version, schema_version)
    plaintext = await sealer.open(sealed, purpose=STATE_PURPOSE, fields=fields, run_id=run_id)
    digest = await off_loop_if_large(len(plaintext), lambda: hashlib.sha256(plaintext).hexdigest())
    if digest != expected_digest:
        raise await _tampered(
            sealer, run_id, "decrypted but its SHA-256 does not match the run's blob digest"
        )
    try:
        return await off_loop_if_large(len(plaintext), lambda: plaintext.decode("utf-8"))
    except UnicodeDecodeError:
        raise await _tampered(sealer, run_id, "is not UTF-8 text") from None


async def _tampered(sealer: Sealer, run_id: str, problem: str) -> TamperError:
    error = TamperError(f"{STATE_PURPOSE} blob (run_id={run_id}) {problem}")
    return await sealer.tampered(error, run_id=run_id, purpose=STATE_PURPOSE)


def version_conflict(
    run_id: str, *, expected_version: int, version: int, status: str
) -> ConflictError:
    """A save that named a version the run has moved past."""
    return ConflictError(
        f"run {run_id!r} is at version {version} ({status}), "
        f"not the expected version {expected_version}"
    )
