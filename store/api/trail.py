"""What was done, kept for good: the hash-chained audit log and the execution ledger (the
runner's durable journal).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from bot.runtime.journal import Claim
from store.records import AuditEvent, AuditVerification, LedgerEntry


class AuditStore(Protocol):
    """The hash-chained audit log (the chain: store.audit)."""

    async def append_audit(
        self,
        kind: str,
        *,
        actor: str | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one event (queued, then linked into the chain: every read sees it)."""
        ...

    async def audit_events(
        self,
        *,
        since: datetime | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
    ) -> list[AuditEvent]: ...

    async def verify_audit(self) -> AuditVerification: ...

    async def audit_head(self) -> tuple[int, str]:
        """(seq, hash) of the newest event: note it elsewhere to detect a rebuilt chain."""
        ...


class LedgerStore(Protocol):
    """The idempotency ledger: the runner's durable journal (store.journal adapts it)."""

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
        """See store.sql.ledger. With `run_lease_token`, refused (LeaseLostError, nothing
        written) unless `owner` holds the run's lease under that token."""
        ...

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
        ...

    async def ledger_mark_uncertain(self, *, execution_key: str, owner: str | None = None) -> None:
        """executing -> uncertain. With `owner`, refused (LeaseHeldError) while another
        owner holds a live lease: it took the key over and must not be fenced off."""
        ...

    async def ledger_resolve_with_result(self, *, execution_key: str, result: str) -> None:
        """A human verified the outcome: uncertain (or interrupted) -> succeeded."""
        ...

    async def ledger_entries(
        self, *, run_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[LedgerEntry]: ...
