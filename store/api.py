"""The store's one async interface: records and operations, no SQL.

Callers (the service, the CLI) see only this module's types. `Store` is the sum of one
protocol per concept: runs, approvals, votes, audit, ledger, maintenance. Each engine
implements every concept in its own package (store/sqlite/, the embedded default) from
the engine-neutral rules beside this module, and `store.engine.EngineStore` joins the
parts into one Store. Every state transition is one conditional update from an expected
state, so of two racing callers exactly one wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from bot.runtime.journal import Claim

RunStatus = Literal["running", "paused", "resuming", "completed", "failed", "cancelled"]
ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "revoked"]
Verdict = Literal["approved", "rejected"]  # how a decision or a vote went
TERMINAL_APPROVAL_STATUSES: frozenset[str] = frozenset(
    {"approved", "rejected", "expired", "revoked"}
)
FINISHED_RUN_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
RunOrigin = Literal["slack", "terminal"]
"""Where a run was started: from Slack (the bot; also runs started from code) or at the
terminal (`approvals-bot demo`). Each surface shows and decides only its own runs;
operators (the CLI) reach every run."""
TASK_SUMMARY_CHARS = 200  # how much of a run's (redacted) task its row keeps
LEGACY_KEY_PREFIX = "call:"
"""An approval requested before approvals were keyed by execution key carries
`call:<tool call id>` as its key: its call is matched by tool call id, as it was then."""


@dataclass(frozen=True, kw_only=True)
class EngineStamp:
    """Which agent engine wrote a run's state, when not the bot's own run core: its name
    ("openai-agents"), its version ("0.24.0") and the schema version of its state ("1.21")."""

    name: str
    version: str
    schema_version: str


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
    origin: RunOrigin = "slack"
    task: str | None = None  # the task as people may see it: redacted, clipped (None: not kept)
    purged_at: datetime | None = None  # retention removed its state, results and snapshots
    engine: EngineStamp | None = None  # None: the bot's own run core wrote the state
    needs_migration: str | None = None  # why this deployment cannot resume it (None: it can)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_RUN_STATUSES


RunCursor = tuple[datetime, str]
"""Keyset position in the runs list: (updated_at, run_id) of the last run seen (the list
runs newest first)."""


@dataclass(frozen=True, kw_only=True)
class RunFilter:
    """Which runs `list_runs` returns (every field optional; all given must hold)."""

    status: RunStatus | None = None
    requester: str | None = None
    agent_name: str | None = None
    updated_since: datetime | None = None
    origin: RunOrigin | None = None


@dataclass(frozen=True, kw_only=True)
class CancelOutcome:
    """What `cancel_run` did. `won`: this call cancelled the run (else nothing changed and
    `run` shows where it is now). `closed`: the approvals it closed (revoked, with the
    cancel's reason), in order; `standing`: the standing decisions it ended."""

    won: bool
    run: RunRecord
    closed: tuple[ApprovalRecord, ...] = ()
    standing: tuple[StandingDecision, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PurgeReport:
    """What `purge_finished_runs` removed (runs, and per kind of content)."""

    finished_before: datetime
    runs: int = 0
    state_blobs: int = 0
    ledger_results: int = 0
    snapshots: int = 0


@dataclass(frozen=True, kw_only=True)
class StandingDecision:
    """A decision made to stand for the rest of its run: every later call of `tool_name`
    in the run is decided the same way (by its own approval row, voted for by `decider`)
    until it is revoked. Keyed by the approval that made it."""

    approval_id: str
    run_id: str
    tool_name: str
    decision: Verdict
    decider: str
    reason: str | None
    message: str | None
    created_at: datetime
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    revoke_reason: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


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
    required_approvals: int = 1
    remind_at: datetime | None = None
    execution_key: str | None = None  # the call's; None: keyed by its tool call id (legacy)

    @property
    def key(self) -> str:
        """What makes the approval unique in its run (one open approval per key)."""
        if self.execution_key is not None:
            return self.execution_key
        return LEGACY_KEY_PREFIX + self.tool_call_id


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
    required_approvals: int = 1  # the quorum, fixed by the policy when it was requested
    remind_at: datetime | None = None  # when approvers get their one reminder (None: never)
    reminded_at: datetime | None = None  # when it was sent (set once, by claim_reminders)
    revoke_reason: str | None = None  # why it was revoked (reason keeps the decider's)
    amended_by: str | None = None  # the approver who changed the arguments, if one did
    execution_key: str = ""  # the call's execution key; LEGACY_KEY_PREFIX + id for old rows

    def answers(self, *, execution_key: str, tool_call_id: str) -> bool:
        """Whether this approval is for the call with this execution key (an approval from
        before keys were stored: for the call with this tool call id)."""
        if self.execution_key.startswith(LEGACY_KEY_PREFIX):
            return self.execution_key == LEGACY_KEY_PREFIX + tool_call_id
        return self.execution_key == execution_key


@dataclass(frozen=True, kw_only=True)
class DecisionOutcome:
    """`won` is true when this call made the transition; otherwise `record` shows the
    state that won (who decided, when)."""

    won: bool
    record: ApprovalRecord


@dataclass(frozen=True, kw_only=True)
class VoteRecord:
    """One person's vote on one digest of an approval's arguments."""

    approval_id: str
    voter: str
    decision: Verdict
    digest: str  # the arguments digest voted on; votes on an older digest no longer count
    reason: str | None
    at: datetime


VoteResult = Literal["decided", "counted", "already_voted", "stale_digest", "closed", "expired"]


@dataclass(frozen=True, kw_only=True)
class VoteOutcome:
    """What `vote` did, in one transaction:

    - decided: the vote was recorded and moved the approval to approved (quorum met)
      or rejected (one rejection rejects); this caller made the transition;
    - counted: the vote was recorded; the quorum is not met yet;
    - already_voted: this voter already voted on this digest (nothing changed);
    - stale_digest: the arguments changed since the voter saw them (nothing changed);
    - closed: the approval is no longer pending (`record` shows who decided);
    - expired: it was past its expiry: it is now `expired` (nothing else changed).
    `votes` are the votes on the approval's current digest after the call."""

    result: VoteResult
    record: ApprovalRecord
    votes: tuple[VoteRecord, ...]


@dataclass(frozen=True, kw_only=True)
class Amendment:
    """Approve-with-changes: the approval's digest and snapshot become these before the
    vote is counted; votes on the old digest stop counting."""

    arguments_digest: str
    snapshot: str  # redacted review snapshot JSON of the new arguments


PendingCursor = tuple[datetime, str]
"""Keyset position in the pending list: (created_at, approval_id) of the last row seen."""


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
    already_current: int = 0  # sealed with the newest key before this pass
    skipped_rewritten: int = 0  # rewritten by someone else while we worked (already current)
    tampered: list[str] = field(default_factory=list)  # records that failed to decrypt


class RunStore(Protocol):
    """Runs: a small row for status and compare-and-set, and the sealed state."""

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
        origin: RunOrigin = "slack",
        task: str | None = None,
        engine: EngineStamp | None = None,
    ) -> RunRecord:
        """A new run with its sealed state. `task` is the task as people may see it (the
        caller redacts it; the row keeps its first TASK_SUMMARY_CHARS characters);
        `engine` names the agent engine that writes its state, if not ours."""
        ...

    async def save_run_state(
        self,
        run_id: str,
        *,
        expected_version: int,
        state_json: str,
        status: RunStatus,
        schema_version: str,
        engine: EngineStamp | None = None,
    ) -> RunRecord:
        """Encrypt and store a new state blob and status (and the engine that wrote it);
        ConflictError if the version moved. Clears `needs_migration`: the state was just
        written by an engine that could read it."""
        ...

    async def mark_needs_migration(
        self, run_id: str, *, reason: str | None, actor: str
    ) -> RunRecord | None:
        """Set (or, with None, clear) why the run cannot be resumed by this deployment,
        with a `needs_migration` (or `migration_cleared`) audit event in the same
        transaction; None, and nothing written, when it already said so. Unknown run ->
        InputError."""
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
        self,
        *,
        status: RunStatus | None = None,
        limit: int = 100,
        where: RunFilter | None = None,
        after: RunCursor | None = None,
    ) -> list[RunRecord]:
        """Runs newest first (by `updated_at`, then run id), those matching `status` and
        `where`, after the keyset cursor `after` (the last run of the previous page)."""
        ...

    async def cancel_run(
        self,
        run_id: str,
        *,
        expected_version: int,
        actor: str,
        reason: str,
        via: str | None = None,
    ) -> CancelOutcome:
        """In one transaction: the run (at `expected_version`, not finished) becomes
        `cancelled`; its pending approvals, and its approved ones whose call has not
        started, become `revoked` (by `actor`, reason "run cancelled: <reason>"); its
        active standing decisions end; audited `cancelled` (with `via`) and `revoked` per
        approval. A run that moved (another version) or finished changes nothing
        (`won` False). Unknown run -> InputError."""
        ...

    async def purge_finished_runs(
        self, *, finished_before: datetime, actor: str, batch_size: int = 200
    ) -> PurgeReport:
        """Retention: for every run completed, failed or cancelled before
        `finished_before` (by `updated_at`) and not purged yet, delete its sealed state,
        its ledger results and its approvals' review snapshots (the argument digests stay),
        clear its task, and set `purged_at`. Run, approval, vote and ledger rows stay, and
        the audit log is untouched but for one `purged` event per batch naming its runs."""
        ...


class ApprovalStore(Protocol):
    """Approvals: requested, decided by one person, expired, revoked, reminded once, and
    listed for people (pending, mine, recent) by index."""

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
        decision: Verdict,
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

    async def revoke(
        self, approval_id: str, *, actor: str, reason: str | None, via: str | None = None
    ) -> DecisionOutcome:
        """pending|approved -> revoked (approved only while the call has not executed).
        `via` (where the revocation came from: "cli", ...) goes into the audit event."""
        ...

    async def set_approval_message(self, approval_id: str, *, channel: str, ts: str) -> None: ...

    async def claim_reminders(self, *, now: datetime) -> list[ApprovalRecord]:
        """Pending approvals whose `remind_at` has come and that were never reminded:
        marks them reminded (a conditional update: once, across restarts and replicas)
        and returns them."""
        ...

    async def pending_page(
        self,
        *,
        after: PendingCursor | None = None,
        limit: int = 20,
        not_requested_by: str | None = None,
        tool_names: Sequence[str] | None = None,
        except_tool_names: Sequence[str] = (),
        origin: RunOrigin | None = None,
    ) -> list[ApprovalRecord]:
        """Pending approvals in (created_at, approval_id) order after the cursor, by an
        index (keyset pagination: constant cost per page however many are pending);
        with `origin`, only those of runs started there."""
        ...

    async def approvals_requested_by(
        self, requester: str, *, limit: int = 20
    ) -> list[ApprovalRecord]:
        """The requester's approvals, newest first."""
        ...

    async def recent_decisions(
        self, *, limit: int = 20, origin: RunOrigin | None = None
    ) -> list[ApprovalRecord]:
        """Approvals by decision time, newest first (approved or rejected); with `origin`,
        only those of runs started there."""
        ...


class StandingStore(Protocol):
    """Standing decisions: a decided approval made to stand for the rest of its run."""

    async def add_standing_decision(
        self, approval_id: str, *, via: str | None = None
    ) -> StandingDecision:
        """Make the decided (approved or rejected) approval stand for the rest of its run;
        an active standing decision for the same run and tool is revoked (superseded).
        Audited `standing_set`. InputError unless the approval is decided and its run is
        not finished."""
        ...

    async def standing_decisions(
        self, run_id: str, *, active_only: bool = True
    ) -> list[StandingDecision]:
        """The run's standing decisions, oldest first."""
        ...

    async def get_standing_decision(self, approval_id: str) -> StandingDecision | None: ...

    async def revoke_standing_decision(
        self, approval_id: str, *, actor: str, reason: str, via: str | None = None
    ) -> StandingDecision | None:
        """End the standing decision the approval made (audited `standing_revoked`); None
        when there is none or it already ended."""
        ...


class VoteStore(Protocol):
    """Votes toward an approval's quorum (the rule: store.approvals.tally)."""

    async def vote(
        self,
        approval_id: str,
        *,
        decision: Verdict,
        voter: str,
        digest: str,
        reason: str | None,
        message: str | None = None,
        amend: Amendment | None = None,
        now: datetime | None = None,
        via: str | None = None,
    ) -> VoteOutcome:
        """Record one vote and, when it completes the quorum (`required_approvals`
        distinct approvals on the current digest) or rejects, the transition, in ONE
        write transaction with conditional updates: of two racing final votes exactly
        one makes the transition. `digest` is the digest the voter saw (or, with `amend`,
        the digest being replaced). `via` (where the vote came from: "cli", "standing"
        ...) goes into its audit events. Audited: `voted`, `decided`, `arguments_changed`,
        `expired`. Unknown id -> InputError."""
        ...

    async def votes(self, approval_ids: Sequence[str]) -> dict[str, list[VoteRecord]]:
        """The votes on each approval (every digest, in order), by approval id. Votes
        made void by a change back to earlier arguments are gone here (the audit keeps them)."""
        ...

    async def record_full_read(self, approval_id: str, *, reader: str, digest: str) -> bool:
        """Record that `reader` was shown the whole arguments of `digest` (a call the
        card shows cut; the service counts their approval only then). True when new, in
        one write transaction with its `read_in_full` audit event; a repeat changes
        nothing (False). Unknown id -> InputError."""
        ...

    async def has_read_in_full(self, approval_id: str, *, reader: str, digest: str) -> bool:
        """Whether `record_full_read` was recorded for this reader and digest."""
        ...


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
    ) -> AuditEvent: ...

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
    ) -> Claim: ...

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


class MaintenanceStore(Protocol):
    """What operators do to the store itself: schema migration (at open), key rotation."""

    @property
    def migration_report(self) -> MigrationReport:
        """What opening the store migrated."""
        ...

    async def rotate_keys(
        self, *, actor: str = "operator", batch_size: int = 200
    ) -> RotationReport:
        """Re-encrypt every sealed blob with the newest key of the ring, in batches."""
        ...

    async def schema_status(self) -> SchemaStatus:
        """The schema version the database records now (a query: it also proves the
        database answers) against the newest this build ships (readiness)."""
        ...

    async def close(self) -> None: ...


class Store(
    RunStore,
    ApprovalStore,
    VoteStore,
    StandingStore,
    AuditStore,
    LedgerStore,
    MaintenanceStore,
    Protocol,
):
    """The whole store: every concept's operations on one database."""
