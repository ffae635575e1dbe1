"""One Store from an engine's parts: one object per concept, joined by composition.

An engine (store/sqlite/, and next to it any other) implements each concept protocol of
store.api in its own class: runs, approvals, votes, audit, ledger, each given the
database and the collaborators it needs. `EngineStore` joins them: every Store operation
is the owning part's own bound method, so a call costs no extra hop and a reader finds
an operation in the part named after its concept. The engine adds what is its own:
opening, key rotation and closing (the maintenance protocol).
"""

from __future__ import annotations

from store.api import (
    ApprovalStore,
    AuditStore,
    LedgerStore,
    McpCallStore,
    RequestMemoryStore,
    RunLeaseStore,
    RunStore,
    SealStore,
    StandingStore,
    VoteStore,
)


class EngineStore:
    """The runs, leases, request memory, approvals, votes, audit, ledger and MCP call
    operations of one engine."""

    def __init__(
        self,
        *,
        runs: RunStore,
        leases: RunLeaseStore,
        requests: RequestMemoryStore,
        approvals: ApprovalStore,
        votes: VoteStore,
        standing: StandingStore,
        audit: AuditStore,
        ledger: LedgerStore,
        sealed: SealStore,
        mcp_calls: McpCallStore,
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
        self.cancel_run = runs.cancel_run
        self.purge_finished_runs = runs.purge_finished_runs

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
        self.list_approvals = approvals.list_approvals
        self.decide = approvals.decide
        self.expire_due = approvals.expire_due
        self.revoke = approvals.revoke
        self.set_approval_message = approvals.set_approval_message
        self.claim_reminders = approvals.claim_reminders
        self.pending_page = approvals.pending_page
        self.approvals_requested_by = approvals.approvals_requested_by
        self.recent_decisions = approvals.recent_decisions

        self.vote = votes.vote
        self.votes = votes.votes
        self.record_full_read = votes.record_full_read
        self.has_read_in_full = votes.has_read_in_full

        self.add_standing_decision = standing.add_standing_decision
        self.standing_decisions = standing.standing_decisions
        self.get_standing_decision = standing.get_standing_decision
        self.revoke_standing_decision = standing.revoke_standing_decision

        self.decision_evidence = sealed.decision_evidence

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
