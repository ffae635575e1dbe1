"""What every part of the SQLite store shares: the database, key ring, clock, and the
fail-closed path for blobs that do not authenticate."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from bot.clock import Clock, utc_now
from bot.errors import TamperError
from bot.off_loop import off_loop_if_large
from store.crypto import AadValue, KeyRing, Sealed, seal, unseal
from store.sqlite import audit
from store.sqlite.connection import Database

T = TypeVar("T")


class StoreBase:
    """Shared state and helpers for the store's parts (runs, approvals, audit, ledger)."""

    def __init__(self, database: Database, keyring: KeyRing, clock: Clock = utc_now) -> None:
        self._db = database
        self._keyring = keyring
        self._clock = clock

    @property
    def database(self) -> Database:
        return self._db

    @property
    def keyring(self) -> KeyRing:
        return self._keyring

    def _now(self) -> datetime:
        return self._clock()

    async def _seal(
        self, plaintext: bytes, *, purpose: str, fields: Mapping[str, AadValue]
    ) -> Sealed:
        return await off_loop_if_large(
            len(plaintext),
            lambda: seal(self._keyring, plaintext, purpose=purpose, fields=fields),
        )

    async def _unseal(
        self,
        sealed: Sealed,
        *,
        purpose: str,
        fields: Mapping[str, AadValue],
        run_id: str | None,
    ) -> bytes:
        """Decrypt, or record `tamper_detected` and raise TamperError (fail closed)."""
        try:
            return await off_loop_if_large(
                len(sealed.ciphertext),
                lambda: unseal(self._keyring, sealed, purpose=purpose, fields=fields),
            )
        except TamperError as error:
            raise await self._tampered(error, run_id=run_id, detail={"purpose": purpose}) from None

    async def append_audit(
        self,
        kind: str,
        *,
        actor: str | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> audit.AuditEvent:
        """Append one audit event in its own write transaction (Store.append_audit; every
        part records its own events through it)."""
        at = self._now()
        audit.canonical_detail(detail)  # refuse a bad detail before taking the write lock

        def body(connection: sqlite3.Connection) -> audit.AuditEvent:
            return audit.append(
                connection,
                kind,
                at=at,
                actor=actor,
                run_id=run_id,
                approval_id=approval_id,
                detail=detail,
            )

        return await self._db.transaction(body)

    async def _tampered(
        self, error: TamperError, *, run_id: str | None, detail: Mapping[str, Any]
    ) -> TamperError:
        """Record the tampering in the audit log; the caller raises what this returns."""
        await self.append_audit(
            "tamper_detected", actor="store", run_id=run_id, detail={**detail, "error": str(error)}
        )
        return error
