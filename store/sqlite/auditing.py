"""The store's audit reads: events, verify, head (append_audit lives in StoreBase, which
every part uses to record its own events)."""

from __future__ import annotations

from datetime import datetime

from store.api import AuditEvent, AuditVerification
from store.sqlite import audit
from store.sqlite.base import StoreBase


class AuditPart(StoreBase):
    async def audit_events(
        self,
        *,
        since: datetime | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
    ) -> list[AuditEvent]:
        return await audit.read_events(
            self._db, since=since, run_id=run_id, approval_id=approval_id
        )

    async def verify_audit(self) -> AuditVerification:
        return await audit.verify(self._db)

    async def audit_head(self) -> tuple[int, str]:
        """(seq, hash) of the newest event: note it elsewhere to detect a rebuilt chain."""
        return await audit.head(self._db)
