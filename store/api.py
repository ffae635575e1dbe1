"""The store's one async interface: its operations, no SQL (what they take and return
is store.records).

Callers (the service, the CLI) see only these protocols and the records. `Store` is the
sum of one protocol per concept: runs, approvals, votes, audit, ledger, maintenance.
Every concept is one part of store/sql/ (its rules, its SQL and its write transactions,
shared by every backend), and `store.sql.store.SqlStore` joins the parts into one Store;
a backend package (store/sqlite/, the embedded default, and store/postgres/) brings the
connections they run on. Every state transition is one conditional update from an
expected state, so of two racing callers exactly one wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from bot.runtime.journal import Claim
from store.records import (
    Amendment,
    ApprovalCopy,
    ApprovalRecord,
    ApprovalStatus,
    ApprovalWindow,
    AuditEvent,
    AuditVerification,
    CancelOutcome,
    DecisionEvidence,
    DecisionOutcome,
    EngineStamp,
    Escalation,
    FiredEscalation,
    LeaseTerms,
    LedgerEntry,
    McpCallClaim,
    MigrationReport,
    NewApproval,
    NewCopy,
    PendingCursor,
    PurgeReport,
    RotationReport,
    RunCursor,
    RunFilter,
    RunLease,
    RunOrigin,
    RunRecord,
    RunStatus,
    SchemaStatus,
    StandIn,
    StandingDecision,
    Verdict,
    VoteOutcome,
    VoteRecord,
)


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
        lease: LeaseTerms | None = None,
    ) -> RunRecord:
        """A new run with its sealed state. `task` is the task as people may see it (the
        caller redacts it; the row keeps its first TASK_SUMMARY_CHARS characters);
        `engine` names the agent engine that writes its state, if not ours. `lease`:
        the creator holds the new (working) run's lease, token FIRST_LEASE_TOKEN."""
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
        """Encrypt and store a new state blob and status (and the agent engine that wrote it);
        ConflictError if the version moved. Clears `needs_migration`: the state was just
        written by an agent engine that could read it. A status that is not working ends the
        run's lease (a takeover moves the version, so a worker that lost the run cannot
        save over it)."""
        ...

    async def mark_needs_migration(
        self, run_id: str, *, reason: str | None, actor: str
    ) -> RunRecord | None:
        """Set (or, with None, clear) why the run cannot be resumed by this deployment,
        with a `needs_migration` (or `migration_cleared`) audit event in the same
        transaction; None, and nothing written, when it already said so. Unknown run ->
        InputError."""
        ...

    async def set_run_hold(
        self, run_id: str, *, actor: str, reason: str | None, via: str | None = None
    ) -> RunRecord | None:
        """Hold the run (`reason` given: `actor` paused it; only a run not finished and not
        already held) or release it (`reason` None; only a held run), with a `paused` or
        `unpaused` audit event in the same transaction. Neither status nor version moves.
        None, and nothing written, when the run was not in a state to change so. Unknown
        run -> InputError."""
        ...

    async def transition_run(
        self,
        run_id: str,
        *,
        expected_status: RunStatus,
        new_status: RunStatus,
        expected_version: int | None = None,
    ) -> RunRecord | None:
        """CAS on status (and, given `expected_version`, on the run's version too: any
        other worker's claim, save or transition moved it). None if lost. A status that
        is not working ends the run's lease; to work on a run, claim it instead
        (`claim_run`); to leave working, release the lease (`release_run_lease`)."""
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
        self,
        *,
        finished_before: datetime,
        actor: str,
        batch_size: int = 200,
        dry_run: bool = False,
    ) -> PurgeReport:
        """Retention: for every run completed, failed or cancelled before
        `finished_before` (by `updated_at`) and not purged yet, delete its sealed state,
        its ledger results and its approvals' review snapshots (the argument digests stay),
        clear its task, and set `purged_at`. Run, approval, vote and ledger rows stay, and
        the audit log is untouched but for one `purged` event per batch naming its runs.
        `dry_run`: count what would go, change nothing (nor audit anything)."""
        ...


class RunLeaseStore(Protocol):
    """Run leases: which worker works on a run, so that several workers on one database
    resume each run once, and take over the runs of a worker that died."""

    async def claim_run(
        self,
        run_id: str,
        *,
        expected_status: RunStatus,
        new_status: RunStatus,
        owner: str,
        lease_seconds: float,
        skip_locked: bool = False,
        unless_held: bool = False,
    ) -> RunLease | None:
        """Compare-and-set `expected_status` -> `new_status` (a working status) that gives
        `owner` the run's lease under a new token. From a working status it succeeds only
        when no other owner holds a live lease: the holder's lease ran out, or `owner`
        held it (a restarted worker), or the run has none (older data). None when lost
        (the run moved, or another worker holds it). InputError for a `new_status` that
        is not working or an unknown run. With `skip_locked` (the sweeps' takeovers), a
        run or lease that another transaction holds right now is not waited for: None,
        as when another worker holds the run (it is acting on it this very moment).
        With `unless_held`, a run an operator paused (`held_by` set) is not claimed:
        None, checked in the claim's own transaction, so a hold committed before the
        claim is never missed."""
        ...

    async def renew_run_lease(self, lease: RunLease, *, lease_seconds: float) -> RunLease:
        """Extend the lease from now, and the ledger leases of the run's executing calls
        that its owner holds, in one transaction. LeaseLostError when the token moved on
        (another worker took the run over, it was cancelled, or it stopped working)."""
        ...

    async def renew_run_leases(
        self, leases: Sequence[RunLease], *, lease_seconds: float
    ) -> list[RunLease]:
        """`renew_run_lease` for every lease at once: one conditional update over the
        (run, owner, token) of each, in one transaction with the ledger leases of their
        runs' executing calls. Returns the leases still held, renewed, in the order
        given; a lease whose token moved on is left out (it is lost) and nothing is
        written for it."""
        ...

    async def release_run_lease(self, lease: RunLease, *, new_status: RunStatus) -> RunRecord:
        """The holder moves the run to `new_status` (not a working one) and the lease
        ends. LeaseLostError when the token moved on: nothing changes."""
        ...

    async def run_lease(self, run_id: str) -> RunLease | None:
        """The run's current lease (live or run out), None when nobody holds it."""
        ...

    async def abandoned_runs(self, *, limit: int = 100) -> list[RunRecord]:
        """Working runs whose lease ran out (their worker died or hung), oldest first."""
        ...

    async def unresumed_runs(
        self, *, decided_before: datetime, limit: int = 100
    ) -> list[RunRecord]:
        """Paused runs with no pending approval, a decision (an approval decided, revoked
        or expired) taken after the run last moved, and none after `decided_before`: the
        worker that took the last decision died before it claimed the resume. Oldest
        first."""
        ...


class RequestMemoryStore(Protocol):
    """What was received recently, shared by every worker on the database."""

    async def remember_requests(self, requests: Sequence[tuple[str, float]]) -> list[bool]:
        """Remember each (key, ttl_seconds); for each, in order, True the first time (or
        once an earlier sighting's time ran out), False while it is remembered (a key
        twice in `requests`: its first time only). One write transaction for all, so of
        two workers receiving the same request exactly one sees True."""
        ...

    async def forget_expired_requests(self) -> int:
        """Drop the keys whose time ran out; returns how many."""
        ...


class McpCallStore(Protocol):
    """The MCP gateway's calls: which run answers a client's call, so that the same call
    retried (same client, tool and arguments: the same key) attaches to it on any worker."""

    async def claim_mcp_call(
        self, call_key: str, *, run_id: str, replacing: str | None = None
    ) -> McpCallClaim:
        """Map `call_key` to `run_id` when it is free, or when it maps to `replacing` (a
        run that no longer answers it); otherwise answer the run it maps to (`won`
        False). One write: of two workers claiming one key, one wins and the other is
        told the winner's run."""
        ...

    async def release_mcp_call(self, call_key: str, *, run_id: str) -> bool:
        """Forget the key while it still maps to `run_id` (its result was handed out);
        True when it did."""
        ...

    async def forget_mcp_calls(self, *, before: datetime) -> int:
        """Forget the keys claimed before that time whose run finished before it too, or
        never came to be; returns how many."""
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

    async def expire_due(
        self, *, now: datetime | None = None, batch: int = 100
    ) -> list[ApprovalRecord]:
        """Expire every pending approval past its expiry; returns those it expired. In
        transactions of at most `batch` approvals each, until none is left; an approval
        another transaction holds right now (another replica's sweep, a decision) is
        skipped, not waited for: it is left to that transaction or to the next sweep."""
        ...

    async def revoke(
        self, approval_id: str, *, actor: str, reason: str | None, via: str | None = None
    ) -> DecisionOutcome:
        """pending|approved -> revoked (approved only while the call has not executed).
        `via` (where the revocation came from: "cli", ...) goes into the audit event."""
        ...

    async def set_approval_message(self, approval_id: str, *, channel: str, ts: str) -> None: ...

    async def claim_reminders(self, *, now: datetime, batch: int = 100) -> list[ApprovalRecord]:
        """Pending approvals whose `remind_at` has come and that were never reminded:
        marks them reminded (a conditional update: once, across restarts and replicas)
        and returns them; in batches and skipping held rows, as `expire_due`."""
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


class SealStore(Protocol):
    """What a decision rests on, each seal checked (store.seals); the service decides
    what counts."""

    async def decision_evidence(self, approval_id: str) -> DecisionEvidence | None:
        """The approval, its request seal and every vote on it; None when unknown."""
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


class WindowStore(Protocol):
    """Approval windows: an approved call's approval covering later matching calls of its
    tool for a while (store.sql.windows)."""

    async def open_window(
        self,
        approval_id: str,
        *,
        match_fields: tuple[str, ...],
        match_values: str,
        lasts: timedelta,
        via: str | None = None,
    ) -> ApprovalWindow:
        """Open a window on the approved approval for `lasts` from now: its approver's
        approval of calls of its tool whose `match_fields` have `match_values` (canonical
        JSON; kept only as a keyed MAC). Sealed, audited `window_opened`; the same
        window again when it exists. InputError unless the approval is approved."""
        ...

    async def open_windows(self, tool_name: str, *, at: datetime) -> list[ApprovalWindow]:
        """The tool's windows open at `at`, oldest first, each saying what its seal showed."""
        ...

    async def all_open_windows(self, *, at: datetime, limit: int = 50) -> list[ApprovalWindow]:
        """Every window open at `at`, soonest to end first."""
        ...

    async def get_window(self, window_id: str) -> ApprovalWindow | None: ...

    async def window_matches(self, window_id: str, *, match_values: str) -> bool:
        """Do a call's matched values (canonical JSON) give the window's match digest?"""
        ...

    async def revoke_window(
        self, window_id: str, *, actor: str, reason: str, via: str | None = None
    ) -> ApprovalWindow | None:
        """End the window (audited `window_revoked`); None when it already ended."""
        ...


class VoteStore(Protocol):
    """Votes toward an approval's quorum (the rule: store.sql.votes.tally)."""

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


class StandInStore(Protocol):
    """Absences: an approver away until a time, and who stands in for them (sealed)."""

    async def set_stand_in(
        self, away_user: str, *, stand_in: str | None, until: datetime, via: str | None = None
    ) -> StandIn:
        """`away_user` is away from now until `until`, `stand_in` deciding in their place
        (None: nobody); an absence still open ends first. Sealed, audited `away_set`.
        InputError when `until` has passed or someone would stand in for themselves."""
        ...

    async def end_stand_in(
        self, away_user: str, *, actor: str, via: str | None = None
    ) -> StandIn | None:
        """End the person's open absence now (audited `away_ended`); None when there is
        none."""
        ...

    async def stand_ins_of(self, users: Sequence[str], *, at: datetime) -> dict[str, StandIn]:
        """The absence of each of `users` that holds at `at`, by person (those away only);
        each says what its seal showed."""
        ...

    async def standing_in_for(self, stand_in: str, *, at: datetime) -> list[StandIn]:
        """The absences in which `stand_in` stands in for someone at `at`."""
        ...


class EscalationStore(Protocol):
    """An approval's escalation steps: written (and sealed) with the request
    (`NewApproval.escalations`), fired once by the sweeper."""

    async def escalations(self, approval_id: str) -> list[Escalation]:
        """The approval's steps in order, each saying what its seal showed."""
        ...

    async def fire_escalations(self, *, now: datetime, batch: int = 100) -> list[FiredEscalation]:
        """Mark the steps due at `now` fired, each once: those of pending approvals
        `escalated` (audited; returned with the approval), those of closed ones `skipped`.
        In batches, skipping rows another transaction holds (another replica's sweep, a
        decision being recorded), as `expire_due`."""
        ...


class CopyStore(Protocol):
    """Copies of review cards in people's direct messages."""

    async def plan_copies(
        self, approval_id: str, copies: Sequence[NewCopy], *, claim_until: datetime
    ) -> list[ApprovalCopy]:
        """Plan a copy per person (one per approval and person, ever); returns the ones
        this call planned, held by the caller until `claim_until` (the others existed)."""
        ...

    async def copy_posted(self, approval_id: str, recipient: str, *, channel: str, ts: str) -> None:
        """The copy was posted there (a decision updates it). InputError if unplanned."""
        ...

    async def claim_unsent_copies(
        self,
        *,
        now: datetime,
        claim_until: datetime,
        max_attempts: int,
        batch: int = 100,
    ) -> list[ApprovalCopy]:
        """Copies of pending approvals not posted yet whose claim ran out, tried fewer
        than `max_attempts` times: claimed until `claim_until` (one more attempt each),
        skipping rows another transaction holds."""
        ...

    async def approval_copies(self, approval_id: str) -> list[ApprovalCopy]:
        """Every copy of the approval's card, planned or posted."""
        ...


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

    def missing_key_ids(self) -> dict[str, str]:
        """The key ids this process was asked to open sealed data with and its key ring
        lacks (each with the blob that named it first): work on that data waits for the
        key (KeyMissingError), and readiness says so until a restart with it."""
        ...

    async def schema_status(self) -> SchemaStatus:
        """The schema version the database records now (a query: it also proves the
        database answers) against the newest this build ships (readiness)."""
        ...

    async def close(self) -> None: ...


class Store(
    RunStore,
    RunLeaseStore,
    RequestMemoryStore,
    McpCallStore,
    ApprovalStore,
    VoteStore,
    StandingStore,
    WindowStore,
    SealStore,
    StandInStore,
    EscalationStore,
    CopyStore,
    AuditStore,
    LedgerStore,
    MaintenanceStore,
    Protocol,
):
    """The whole store: every concept's operations on one database."""
