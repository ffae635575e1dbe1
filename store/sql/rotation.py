"""Key rotation: re-encrypt every sealed blob with the newest key of the ring.

Work goes in batches, each its own transaction, and every rewrite is conditional on the
nonce it read, so a blob rewritten meanwhile (by a state save) is left alone. Stopping
half-way is safe: the next run picks up whatever is not yet under the newest key. A
blob that fails to decrypt is never re-encrypted (that would launder the tampering): it
is counted, audited as `tamper_detected`, and left as it is. Decision seals (votes,
standing decisions, approval requests) made under an older key are re-made under the
newest (store.sql.seals.SealRotation), so the old key can leave the ring without
stranding an approved call; a seal that does not verify is reported, never re-made.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from bot.errors import KeyMissingError, TamperError
from store.api import AuditStore
from store.crypto import AadValue, Sealed, Sealer
from store.records import RotationReport
from store.rows import Row
from store.sql.ledger import RESULT_PURPOSE, result_fields
from store.sql.run_state import STATE_PURPOSE, state_fields
from store.sql.seals import SealRotation
from store.tx import Body, Database, many, run

DEFAULT_BATCH = 200


@dataclass(frozen=True, kw_only=True)
class _Pending:
    record: str  # run id or execution key
    run_id: str | None
    old_nonce: bytes
    sealed: Sealed


class KeyRotation:
    """`rotate_keys`."""

    def __init__(
        self, database: Database, sealer: Sealer, audit: AuditStore, seals: SealRotation
    ) -> None:
        self._db = database
        self._sealer = sealer
        self._audit = audit
        self._seals = seals

    async def rotate_keys(
        self, *, actor: str = "operator", batch_size: int = DEFAULT_BATCH
    ) -> RotationReport:
        newest = self._sealer.keyring.newest.key_id
        report = RotationReport(key_id=newest, already_current=await self._count_current(newest))
        await self._rotate_run_states(report, batch_size)
        await self._rotate_ledger_results(report, batch_size)
        await self._seals.reseal(report, batch_size)
        await self._audit.append_audit(
            "key_rotated",
            actor=actor,
            detail={
                "key_id": newest,
                "run_states": report.run_states,
                "ledger_results": report.ledger_results,
                "seals": report.seals,
                "already_current": report.already_current,
                "tampered": len(report.tampered),
            },
        )
        return report

    async def _count_current(self, newest: str) -> int:
        row = await self._db.read_one(
            "SELECT (SELECT COUNT(*) FROM run_blobs WHERE key_id = ?) + "
            "(SELECT COUNT(*) FROM ledger WHERE result_key_id = ?)",
            (newest, newest),
        )
        return 0 if row is None else int(row[0])

    async def _rotate_run_states(self, report: RotationReport, batch_size: int) -> None:
        after = ""
        while True:
            rows = await self._db.read(
                "SELECT b.run_id, b.key_id, CAST(b.nonce AS BLOB) AS nonce, "
                "CAST(b.ciphertext AS BLOB) AS ciphertext, r.state_version, "
                "r.schema_version FROM run_blobs b JOIN runs r ON r.run_id = b.run_id "
                "WHERE b.key_id <> ? AND b.run_id > ? ORDER BY b.run_id LIMIT ?",
                (report.key_id, after, batch_size),
            )
            if not rows:
                return
            after = rows[-1]["run_id"]
            batch = []
            for row in rows:
                fields = state_fields(
                    row["run_id"], int(row["state_version"]), row["schema_version"]
                )
                pending = await self._reseal(
                    row, report, purpose=STATE_PURPOSE, fields=fields,
                    record=row["run_id"], run_id=row["run_id"],
                )  # fmt: skip
                if pending is not None:
                    batch.append(pending)
            report.run_states += await self._db.transact(
                functools.partial(_write_states, batch=batch, report=report)
            )

    async def _rotate_ledger_results(self, report: RotationReport, batch_size: int) -> None:
        after = ""
        while True:
            rows = await self._db.read(
                "SELECT execution_key, run_id, lease_version, result_key_id AS key_id, "
                "CAST(result_nonce AS BLOB) AS nonce, "
                "CAST(result_ciphertext AS BLOB) AS ciphertext FROM ledger "
                "WHERE result_ciphertext IS NOT NULL AND result_key_id <> ? "
                "AND execution_key > ? ORDER BY execution_key LIMIT ?",
                (report.key_id, after, batch_size),
            )
            if not rows:
                return
            after = rows[-1]["execution_key"]
            batch = []
            for row in rows:
                fields = result_fields(row["execution_key"], int(row["lease_version"]))
                pending = await self._reseal(
                    row, report, purpose=RESULT_PURPOSE, fields=fields,
                    record=row["execution_key"], run_id=row["run_id"],
                )  # fmt: skip
                if pending is not None:
                    batch.append(pending)
            report.ledger_results += await self._db.transact(
                functools.partial(_write_results, batch=batch, report=report)
            )

    async def _reseal(
        self,
        row: Row,
        report: RotationReport,
        *,
        purpose: str,
        fields: dict[str, AadValue],
        record: str,
        run_id: str | None,
    ) -> _Pending | None:
        old = Sealed(key_id=row["key_id"], nonce=row["nonce"], ciphertext=row["ciphertext"])
        try:
            plaintext = await self._sealer.open(old, purpose=purpose, fields=fields, run_id=run_id)
        except TamperError:
            report.tampered.append(f"{purpose} {record}")
            return None
        except KeyMissingError as error:  # data no process may need: it is reported
            await self._sealer.tampered(TamperError(str(error)), run_id=run_id, purpose=purpose)
            report.tampered.append(f"{purpose} {record}")
            return None
        sealed = await self._sealer.seal(plaintext, purpose=purpose, fields=fields)
        return _Pending(record=record, run_id=run_id, old_nonce=old.nonce, sealed=sealed)


def _write_states(*, batch: list[_Pending], report: RotationReport) -> Body[int]:
    written = 0
    for pending in batch:
        sealed = pending.sealed
        rows = yield many(
            "UPDATE run_blobs SET key_id = ?, nonce = ?, ciphertext = ? "
            "WHERE run_id = ? AND nonce = ? RETURNING run_id",
            (sealed.key_id, sealed.nonce, sealed.ciphertext, pending.record, pending.old_nonce),
        )
        if not rows:
            report.skipped_rewritten += 1
            continue
        yield run("UPDATE runs SET key_id = ? WHERE run_id = ?", (sealed.key_id, pending.record))
        written += 1
    return written


def _write_results(*, batch: list[_Pending], report: RotationReport) -> Body[int]:
    written = 0
    for pending in batch:
        sealed = pending.sealed
        rows = yield many(
            "UPDATE ledger SET result_key_id = ?, result_nonce = ?, result_ciphertext = ? "
            "WHERE execution_key = ? AND result_nonce = ? RETURNING execution_key",
            (sealed.key_id, sealed.nonce, sealed.ciphertext, pending.record, pending.old_nonce),
        )
        if rows:
            written += 1
        else:
            report.skipped_rewritten += 1
    return written
