"""The store's operations on runs: the row for status and compare-and-set, the sealed
state, cancelling and retention (store.sql.runs).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from store.records import (
    CancelOutcome,
    EngineStamp,
    LeaseTerms,
    PurgeReport,
    RunCursor,
    RunFilter,
    RunOrigin,
    RunRecord,
    RunStatus,
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
