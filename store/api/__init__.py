"""The store's one async interface: its operations, no SQL (what they take and return
is store.records).

Callers (the service, the CLI) see only these protocols and the records. `Store` is the
sum of one protocol per concept: runs, approvals, votes, audit, ledger, maintenance.
Every concept is one part of store/sql/ (its rules, its SQL and its write transactions,
shared by every backend), and `store.sql.store.SqlStore` joins the parts into one Store;
a backend package (store/sqlite/, the embedded default, and store/postgres/) brings the
connections they run on. Every state transition is one conditional update from an
expected state, so of two racing callers exactly one wins.

The protocols live by concept: runs (store.api.runs), what the workers on one database
share (store.api.workers), decisions (store.api.decisions), who is asked and where
(store.api.reach), the audit log and the ledger (store.api.trail), maintenance
(store.api.maintenance).
"""

from __future__ import annotations

from typing import Protocol

from store.api.decisions import ApprovalStore, SealStore, StandingStore, VoteStore, WindowStore
from store.api.maintenance import MaintenanceStore
from store.api.reach import CopyStore, EscalationStore, StandInStore
from store.api.runs import RunStore
from store.api.trail import AuditStore, LedgerStore
from store.api.workers import McpCallStore, RequestMemoryStore, RunLeaseStore

__all__ = [
    "ApprovalStore",
    "AuditStore",
    "CopyStore",
    "EscalationStore",
    "LedgerStore",
    "MaintenanceStore",
    "McpCallStore",
    "RequestMemoryStore",
    "RunLeaseStore",
    "RunStore",
    "SealStore",
    "StandInStore",
    "StandingStore",
    "Store",
    "VoteStore",
    "WindowStore",
]


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
