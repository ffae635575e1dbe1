"""The store's operations on decisions: approvals, the votes toward their quorum, the seals
a decision rests on, decisions made to stand for a run, and approval windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from store.records import (
    Amendment,
    ApprovalRecord,
    ApprovalStatus,
    ApprovalWindow,
    DecisionEvidence,
    DecisionOutcome,
    NewApproval,
    PendingCursor,
    RunOrigin,
    RunRecord,
    SealCheck,
    StandingDecision,
    Verdict,
    VoteOutcome,
    VoteRecord,
)


class ApprovalStore(Protocol):
    """Approvals: requested, decided by one person, expired, revoked, reminded once, and
    listed for people (pending, mine, recent) by index."""

    async def add_approvals(self, approvals: Sequence[NewApproval]) -> list[ApprovalRecord]:
        """Insert pending approvals (one open approval per run and tool call: an existing
        one that is not revoked is returned as is; a revoked one does not block asking
        again) and append a `requested` audit event for each new one."""
        ...

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None: ...
    async def approval_and_run(
        self, approval_id: str
    ) -> tuple[ApprovalRecord, RunRecord | None] | None:
        """The approval (as `get_approval`) and its run (None: it has none), in one read:
        one snapshot of both."""
        ...

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

    async def run_approvals(
        self, run_id: str, *, limit: int
    ) -> tuple[list[ApprovalRecord], SealCheck | None]:
        """The run's approvals as `list_approvals(run_id=...)` lists them, and, checked
        on the same read, the request seal of the newest (the latest `created_at`, the
        first listed of a tie; None: the run has no approval)."""
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
