"""The store's one async interface: records and operations, no SQL.

Callers (the service, the CLI) see only this module's types. Engines: SQLite through
aiosqlite (store/sqlite/, the embedded default); Postgres can follow behind the same
Protocol. Every state transition is one conditional update from an expected state, so
of two racing callers exactly one wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from bot.runtime.journal import Claim

RunStatus = Literal["running", "paused", "resuming", "completed", "failed", "cancelled"]
ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "revoked"]
Decision = Literal["approved", "rejected"]
TERMINAL_APPROVAL_STATUSES: frozenset[str] = frozenset(
    {"approved", "rejected", "expired", "revoked"}
)


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    run_id: str
    agent_name: str
    agent_version: str
    schema_version: str
    status: RunStatus
    version: int  # bumped by every transition; the compare-and-set token
    key_id: str  # key that encrypted the current blob
    blob_digest: str  # SHA-256 hex of the plaintext state JSON
    channel: str | None
    thread_ts: str | None
    requester: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class NewApproval:
    approval_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    arguments_digest: str
    snapshot: str  # redacted review snapshot (JSON text) - never the raw arguments
    requester: str | None
    expires_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class ApprovalRecord:
    approval_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    arguments_digest: str
    snapshot: str
    status: ApprovalStatus
    requester: str | None
    decider: str | None
    reason: str | None
    message: str | None  # what the model sees on reject
    created_at: datetime
    decided_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None
    slack_channel: str | None
    slack_ts: str | None
    revoked_by: str | None = None  # who revoked it (decider keeps who decided)


@dataclass(frozen=True, kw_only=True)
class DecisionOutcome:
    """`won` is true when this call made the transition; otherwise `record` shows the
    state that won (who decided, when)."""

    won: bool
    record: ApprovalRecord


@dataclass(frozen=True, kw_only=True)
class AuditEvent:
    seq: int
    kind: str  # requested, decided, resumed, executed, expired, revoked, reconciled,
    #            tamper_detected, digest_mismatch, revealed, key_rotated, ...
    actor: str | None
    run_id: str | None
    approval_id: str | None
    detail: Mapping[str, Any]
    at: datetime
    prev_hash: str
    hash: str


@dataclass(frozen=True, kw_only=True)
class AuditVerification:
    ok: bool
    checked: int
    first_bad_seq: int | None = None
    problem: str | None = None  # "edited", "deleted", "reordered", ...


class Store(Protocol):
    # -- runs -------------------------------------------------------------------------
    async def create_run(
        self,
        *,
        run_id: str,
        agent_name: str,
        agent_version: str,
        schema_version: str,
        state_json: str,
        status: RunStatus,
        channel: str | None = None,
        thread_ts: str | None = None,
        requester: str | None = None,
    ) -> RunRecord: ...

    async def save_run_state(
        self,
        run_id: str,
        *,
        expected_version: int,
        state_json: str,
        status: RunStatus,
        schema_version: str,
    ) -> RunRecord:
        """Encrypt and store a new state blob and status; ConflictError if the version moved."""
        ...

    async def transition_run(
        self, run_id: str, *, expected_status: RunStatus, new_status: RunStatus
    ) -> RunRecord | None:
        """CAS on status only (e.g. paused -> resuming to claim a resume). None if lost."""
        ...

    async def load_run_state(self, run_id: str) -> str:
        """Decrypt the state JSON. TamperError (and a tamper_detected audit event) on failure."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None: ...
    async def find_run_by_thread(self, channel: str, thread_ts: str) -> RunRecord | None: ...
    async def set_run_thread(self, run_id: str, *, channel: str, thread_ts: str) -> None: ...
    async def list_runs(
        self, *, status: RunStatus | None = None, limit: int = 100
    ) -> list[RunRecord]: ...

    # -- approvals --------------------------------------------------------------------
    async def add_approvals(self, approvals: Sequence[NewApproval]) -> list[ApprovalRecord]:
        """Insert pending approvals (one open approval per run and tool call: an existing
        one that is not revoked is returned as is; a revoked one does not block asking
        again) and append a `requested` audit event for each new one."""
        ...

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None: ...
    async def list_approvals(
        self,
        *,
        run_id: str | None = None,
        status: ApprovalStatus | None = None,
        limit: int = 100,
    ) -> list[ApprovalRecord]: ...

    async def decide(
        self,
        approval_id: str,
        *,
        decision: Decision,
        decider: str,
        reason: str | None,
        message: str | None = None,
        now: datetime | None = None,
    ) -> DecisionOutcome:
        """pending -> approved|rejected in one conditional update plus a `decided` audit
        event, in one transaction. Past `expires_at` the approval becomes `expired`
        instead and the outcome is not won. Unknown id -> InputError."""
        ...

    async def expire_due(self, *, now: datetime | None = None) -> list[ApprovalRecord]:
        """Expire every pending approval past its expiry; returns those it expired."""
        ...

    async def revoke(self, approval_id: str, *, actor: str, reason: str | None) -> DecisionOutcome:
        """pending|approved -> revoked (approved only while the call has not executed)."""
        ...

    async def set_approval_message(self, approval_id: str, *, channel: str, ts: str) -> None: ...

    # -- audit ------------------------------------------------------------------------
    async def append_audit(
        self,
        kind: str,
        *,
        actor: str | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> AuditEvent: ...

    async def audit_events(
        self,
        *,
        since: datetime | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
    ) -> list[AuditEvent]: ...

    async def verify_audit(self) -> AuditVerification: ...

    # -- ledger (the runner's durable journal) ----------------------------------------
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
    ) -> Claim: ...

    async def ledger_record_result(
        self, *, execution_key: str, lease_token: int, result: str, is_error: bool
    ) -> None: ...

    async def ledger_mark_uncertain(self, *, execution_key: str, owner: str | None = None) -> None:
        """executing -> uncertain. With `owner`, refused (LeaseHeldError) while another
        owner holds a live lease: it took the key over and must not be fenced off."""
        ...

    async def ledger_resolve_with_result(self, *, execution_key: str, result: str) -> None: ...

    # -- lifecycle --------------------------------------------------------------------
    async def close(self) -> None: ...
