"""SqlStore: every concept part of store.sql on one backend's database, joined into one
Store by composition. Each part (runs, leases, request memory, approvals, votes,
standing decisions, audit, ledger, cancellation, retention, key rotation) is given the
database and the collaborators it needs; every Store operation is the owning part's own
bound method, so a call costs no extra hop and a reader finds an operation in the part
named after its concept. A backend subclasses it with its own database, its rule for
linking the audit chain (store.sql.chain), where it is, and how it closes."""

from __future__ import annotations

from typing import Protocol

from bot.clock import Clock
from store.crypto import KeyRing, Sealer
from store.records import MigrationReport, SchemaStatus
from store.seals import DecisionSeals
from store.sql.approval_lists import ApprovalLists
from store.sql.approvals import Approvals
from store.sql.audit import Audit
from store.sql.cancel import Cancel
from store.sql.copies import Copies
from store.sql.escalations import Escalations
from store.sql.full_reads import FullReads
from store.sql.leases import Leases, RequestMemory
from store.sql.ledger import Ledger
from store.sql.mcp_calls import McpCalls
from store.sql.retention import Retention
from store.sql.rotation import KeyRotation
from store.sql.runs import Runs
from store.sql.seals import SEALS_MIGRATION, SealedDecisions, SealRotation
from store.sql.snapshots import SNAPSHOTS_MIGRATION, SnapshotSealing
from store.sql.stand_ins import StandIns
from store.sql.standing import Standing
from store.sql.votes import Votes
from store.sql.windows import Windows
from store.tx import Database


class ChainedDatabase(Database, Protocol):
    """A backend's database with its rule for linking queued audit events."""

    async def settle(self) -> None:
        """Link every audit event queued so far."""
        ...


class SqlStore:
    """The parts on `database`, sealing with `keyring`; `location` names the database in
    messages (a path, a URL without its password); `latest_schema` is the newest schema
    version the backend's build ships (readiness compares the database's with it)."""

    def __init__(
        self,
        database: ChainedDatabase,
        keyring: KeyRing,
        clock: Clock,
        *,
        migration_report: MigrationReport,
        location: str,
        latest_schema: int,
    ) -> None:
        audit = Audit(database, clock, settle=database.settle)
        sealer = Sealer(keyring, audit)
        seals = DecisionSeals(keyring)
        sealed = SealedDecisions(database, seals, clock, missing=sealer.missing)
        self._bind(
            runs=Runs(database, sealer, clock),
            cancel=Cancel(database, clock, seals),
            retention=Retention(database, clock, seals),
            leases=Leases(database, clock),
            requests=RequestMemory(database, clock),
            approvals=Approvals(database, clock, seals),
            lists=ApprovalLists(database, seals),
            votes=Votes(database, clock, seals),
            reads=FullReads(database, clock),
            standing=Standing(database, clock, seals),
            audit=audit,
            ledger=Ledger(database, sealer, clock),
            sealed=sealed,
            mcp_calls=McpCalls(database, clock),
        )
        self._bind_reach(
            StandIns(database, clock, seals),
            Escalations(database, clock, seals),
            Copies(database, clock),
        )
        self._bind_windows(Windows(database, clock, seals))
        rotation = KeyRotation(database, sealer, audit, SealRotation(database, seals))
        self.rotate_keys = rotation.rotate_keys
        self._sealed = sealed
        self._sealer = sealer
        self._snapshots = SnapshotSealing(database, seals, clock)
        self.keyring = keyring
        self.migration_report = migration_report
        self.location = location
        self._database = database
        self._latest_schema = latest_schema

    def _bind(
        self,
        *,
        runs: Runs,
        cancel: Cancel,
        retention: Retention,
        leases: Leases,
        requests: RequestMemory,
        approvals: Approvals,
        lists: ApprovalLists,
        votes: Votes,
        reads: FullReads,
        standing: Standing,
        audit: Audit,
        ledger: Ledger,
        sealed: SealedDecisions,
        mcp_calls: McpCalls,
    ) -> None:
        self.create_run = runs.create_run
        self.save_run_state = runs.save_run_state
        self.transition_run = runs.transition_run
        self.load_run_state = runs.load_run_state
        self.mark_needs_migration = runs.mark_needs_migration
        self.set_run_hold = runs.set_run_hold
        self.get_run = runs.get_run
        self.find_run_by_thread = runs.find_run_by_thread
        self.set_run_thread = runs.set_run_thread
        self.list_runs = runs.list_runs
        self.cancel_run = cancel.cancel_run
        self.purge_finished_runs = retention.purge_finished_runs

        self.claim_run = leases.claim_run
        self.renew_run_lease = leases.renew_run_lease
        self.renew_run_leases = leases.renew_run_leases
        self.release_run_lease = leases.release_run_lease
        self.run_lease = leases.run_lease
        self.abandoned_runs = leases.abandoned_runs
        self.unresumed_runs = leases.unresumed_runs

        self.remember_requests = requests.remember_requests
        self.forget_expired_requests = requests.forget_expired_requests

        self.add_approvals = approvals.add_approvals
        self.get_approval = approvals.get_approval
        self.approval_and_run = approvals.approval_and_run
        self.list_approvals = approvals.list_approvals
        self.decide = approvals.decide
        self.expire_due = approvals.expire_due
        self.revoke = approvals.revoke
        self.set_approval_message = approvals.set_approval_message
        self.claim_reminders = approvals.claim_reminders
        self.pending_page = lists.pending_page
        self.approvals_requested_by = lists.approvals_requested_by
        self.recent_decisions = lists.recent_decisions

        self.vote = votes.vote
        self.votes = votes.votes
        self.record_full_read = reads.record_full_read
        self.has_read_in_full = reads.has_read_in_full

        self.add_standing_decision = standing.add_standing_decision
        self.standing_decisions = standing.standing_decisions
        self.get_standing_decision = standing.get_standing_decision
        self.revoke_standing_decision = standing.revoke_standing_decision

        self.decision_evidence = sealed.decision_evidence
        self.run_approvals = sealed.run_approvals

        self.append_audit = audit.append_audit
        self.audit_events = audit.audit_events
        self.verify_audit = audit.verify_audit
        self.audit_head = audit.audit_head

        self.ledger_claim = ledger.ledger_claim
        self.ledger_record_result = ledger.ledger_record_result
        self.ledger_mark_uncertain = ledger.ledger_mark_uncertain
        self.ledger_resolve_with_result = ledger.ledger_resolve_with_result
        self.ledger_entries = ledger.ledger_entries

        self.claim_mcp_call = mcp_calls.claim_mcp_call
        self.release_mcp_call = mcp_calls.release_mcp_call
        self.forget_mcp_calls = mcp_calls.forget_mcp_calls

    def _bind_reach(self, stand_ins: StandIns, escalations: Escalations, copies: Copies) -> None:
        self.set_stand_in = stand_ins.set_stand_in
        self.end_stand_in = stand_ins.end_stand_in
        self.stand_ins_of = stand_ins.stand_ins_of
        self.standing_in_for = stand_ins.standing_in_for

        self.escalations = escalations.escalations
        self.fire_escalations = escalations.fire_escalations

        self.plan_copies = copies.plan_copies
        self.copy_posted = copies.copy_posted
        self.claim_unsent_copies = copies.claim_unsent_copies
        self.approval_copies = copies.approval_copies

    def _bind_windows(self, windows: Windows) -> None:
        self.open_window = windows.open_window
        self.open_windows = windows.open_windows
        self.all_open_windows = windows.all_open_windows
        self.get_window = windows.get_window
        self.window_matches = windows.window_matches
        self.revoke_window = windows.revoke_window

    async def finish_opening(self) -> None:
        """After migrating at open: the one-time sealing of the rows of open calls, when
        this open applied migration 0010 to a database that existed (store.sql.seals),
        and of the snapshots already there when it applied 0041 (store.sql.snapshots)."""
        report = self.migration_report
        if report.before > 0 and SEALS_MIGRATION in report.applied:
            await self._sealed.seal_legacy_rows()
        if report.before > 0 and SNAPSHOTS_MIGRATION in report.applied:
            await self._snapshots.seal_existing()

    def missing_key_ids(self) -> dict[str, str]:
        return dict(self._sealer.missing)

    async def schema_status(self) -> SchemaStatus:
        row = await self._database.read_one("SELECT MAX(version) FROM schema_migrations")
        found = 0 if row is None or row[0] is None else int(row[0])
        return SchemaStatus(found=found, latest=self._latest_schema)
