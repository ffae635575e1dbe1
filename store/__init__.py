"""Persistence for approvals-bot: encrypted run blobs, approvals, audit log, ledger.

Callers use the `Store` protocol (store.api) and open the engine with `open_store`.
The modules here hold what every engine shares (records, rows, sealing, the audit
chain, the ledger and quorum rules, migration numbering); each engine package beside
them (store/sqlite/) holds only its connections and SQL.
"""

from store.sqlite.store import SqliteStore, open_store

__all__ = ["SqliteStore", "open_store"]
