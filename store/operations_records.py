"""Records of the audit chain, the execution ledger, MCP call claims and maintenance
(migrations, schema status, key rotation), as the store returns them (store.records
re-exports them all)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, kw_only=True)
class AuditEvent:
    seq: int
    kind: str  # requested, decided, resumed, executed, expired, revoked, reconciled,
    #            tamper_detected, digest_mismatch, revealed, read_in_full, key_rotated, ...
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


@dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    """One ledger row as operators see it (the result stays sealed)."""

    execution_key: str
    run_id: str
    tool_call_id: str
    tool_name: str
    state: str
    attempt: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    lease_version: int
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class McpCallClaim:
    """Which run answers an MCP client's call (by the call's key), since when; `won`:
    this claim made it so (else another claim did, and `run_id` is that one's)."""

    call_key: str
    run_id: str
    claimed_at: datetime
    won: bool


@dataclass(frozen=True, kw_only=True)
class MigrationReport:
    before: int  # schema version found at open (0: empty database)
    after: int
    applied: tuple[str, ...]  # "0001_initial", ...


@dataclass(frozen=True, kw_only=True)
class SchemaStatus:
    found: int  # the schema version the database records now
    latest: int  # the newest this build ships

    @property
    def current(self) -> bool:
        return self.found == self.latest


@dataclass(kw_only=True)
class RotationReport:
    key_id: str  # the key everything is now sealed with
    run_states: int = 0  # re-encrypted in this pass
    ledger_results: int = 0
    seals: int = 0  # decision seals (requests, votes, standing decisions) re-made
    already_current: int = 0  # sealed with the newest key before this pass
    skipped_rewritten: int = 0  # rewritten by someone else while we worked (already current)
    tampered: list[str] = field(default_factory=list)  # records that failed to decrypt
