"""What the store takes and returns: records of runs, approvals, votes, standing
decisions, audit events and ledger entries, and the reports of maintenance. Plain frozen
data with no behaviour beyond what a record says about itself; the operations that
produce them are the protocols of store.api."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, get_args

from bot.errors import InputError

# re-exported (`X as X`): store.records names every record the store returns
from store.operations_records import AuditEvent as AuditEvent
from store.operations_records import AuditVerification as AuditVerification
from store.operations_records import LedgerEntry as LedgerEntry
from store.operations_records import McpCallClaim as McpCallClaim
from store.operations_records import MigrationReport as MigrationReport
from store.operations_records import RotationReport as RotationReport
from store.operations_records import SchemaStatus as SchemaStatus
from store.reach_records import ApprovalCopy as ApprovalCopy
from store.reach_records import Escalation as Escalation
from store.reach_records import EscalationPlan as EscalationPlan
from store.reach_records import FiredEscalation as FiredEscalation
from store.reach_records import NewCopy as NewCopy
from store.reach_records import StandIn as StandIn

RunStatus = Literal["running", "paused", "resuming", "completed", "failed", "cancelled"]
RUN_STATUSES: frozenset[str] = frozenset(get_args(RunStatus))
ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "revoked"]
Verdict = Literal["approved", "rejected"]  # how a decision or a vote went
TERMINAL_APPROVAL_STATUSES: frozenset[str] = frozenset(
    {"approved", "rejected", "expired", "revoked"}
)
FINISHED_RUN_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
WORKING_RUN_STATUSES: frozenset[str] = frozenset({"running", "resuming"})
"""A run in one of these is being worked on, by the worker holding its lease (RunLease)."""
FIRST_LEASE_TOKEN = 1  # the token of the lease a run is created with (`create_run(lease=...)`)
RunOrigin = Literal["slack", "terminal"]
"""Where a run was started: from Slack (the bot; also runs started from code) or at the
terminal (`approvals-bot demo`). Each surface shows and decides only its own runs;
operators (the CLI) reach every run."""
TASK_SUMMARY_CHARS = 200  # how much of a run's (redacted) task its row keeps
LEGACY_KEY_PREFIX = "call:"
"""An approval requested before approvals were keyed by execution key carries
`call:<tool call id>` as its key: its call is matched by tool call id, as it was then."""


def check_run_status(status: str) -> None:
    """InputError unless `status` is a run status (what every run operation checks)."""
    if status not in RUN_STATUSES:
        raise InputError(f"run status {status!r} is not one of {sorted(RUN_STATUSES)}")


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
    held_by: str | None = None  # who paused it (an operator's hold; None: not held)
    hold_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_RUN_STATUSES

    @property
    def held(self) -> bool:
        """Paused by a person: it takes no new step until released (a finished run's
        hold no longer means anything)."""
        return self.held_by is not None and not self.finished


@dataclass(frozen=True, kw_only=True)
class LeaseTerms:
    """A lease asked for: held by `owner` for `seconds` from now, unless renewed."""

    owner: str
    seconds: float


@dataclass(frozen=True, kw_only=True)
class RunLease:
    """A worker's hold on a run it works on (`running` or `resuming`). Another worker may
    take the run over once `expires_at` has passed (unless it was renewed meanwhile);
    `token` is the fencing token: it moves on at every claim and every release, and the
    holder's writes name it (`ledger_claim(run_lease_token=...)`, `renew_run_lease`,
    `release_run_lease`), so a worker that lost the run writes nothing more for it."""

    run: RunRecord
    owner: str
    token: int
    expires_at: datetime

    @property
    def run_id(self) -> str:
        return self.run.run_id


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


SealCheck = Literal["valid", "missing", "unknown_key", "mismatch"]
"""What a read found of a row's decision seal (store.seals): it verifies; there is none
(a row from before seals, or one written without the keys); it names a key id the ring
lacks; it does not match the row (altered, moved from another record, or forged)."""


@dataclass(frozen=True, kw_only=True)
class ApprovalWindow:
    """A time-boxed standing approval: until `expires_at`, `decider`'s approval covers
    later calls of `tool_name` whose `match_fields` arguments equal those of the call
    that opened it (approval `window_id`, in run `run_id`). The values are kept only as a
    keyed MAC (the store matches them); each call it covers is voted for in the
    decider's name by its own approval, with the checks of any vote."""

    window_id: str
    run_id: str
    tool_name: str
    match_fields: tuple[str, ...]
    decider: str
    reason: str | None
    created_at: datetime
    expires_at: datetime
    lasts: timedelta  # the policy's `allow_window` when it was opened
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    revoke_reason: str | None = None
    seal: SealCheck = "missing"  # what the read found of its seal (only "valid" counts)

    def open_at(self, at: datetime) -> bool:
        return self.revoked_at is None and at < self.expires_at


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
    seal: SealCheck = "missing"  # what the read found of its seal (only "valid" counts)

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
    escalations: tuple[EscalationPlan, ...] = ()  # fixed (and sealed) with the request
    policy_fingerprint: str | None = None  # of the policy it is requested under

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
    policy_fingerprint: str | None = None  # of the policy it was requested under (None: old)
    snapshot_seal: SealCheck = "missing"
    """What the read found of the snapshot's seal (store.seals.read_approval). Only
    "valid" may be shown or decided on; otherwise `snapshot` is a stand-in naming the
    tool and digest, and the call is tampered with."""

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


@dataclass(frozen=True, kw_only=True)
class CheckedVote:
    """A vote as read, with what its seal said."""

    vote: VoteRecord
    seal: SealCheck


@dataclass(frozen=True, kw_only=True)
class DecisionEvidence:
    """What the database holds for one approval's decision, each seal checked: the
    request (its quorum, expiry and call) and every vote on it."""

    approval: ApprovalRecord
    request_seal: SealCheck
    votes: tuple[CheckedVote, ...]
    unknown_key_ids: tuple[str, ...] = ()  # of the seals made with a key the ring lacks


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
