"""A run's sealed state blob: what it is bound to (its run id, the run version it was
written at, its schema version; with the purpose and the key id), sealed when a run is
created or saved and opened when it is loaded (store.sql.runs). A blob that is missing,
does not open, or does not match the SHA-256 on the run row is tampering, audited."""

from __future__ import annotations

import hashlib

from bot.errors import TamperError
from bot.off_loop import off_loop_if_large
from store.crypto import AadValue, Sealed, Sealer

STATE_PURPOSE = "run-state"


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
