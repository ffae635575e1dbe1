"""Persistence for approvals-bot: encrypted run blobs, approvals, audit log, ledger.

Callers use the `Store` protocol (store.api) and open the engine with `open_store`.
"""

from store.sqlite.store import SqliteStore, open_store

__all__ = ["SqliteStore", "open_store"]
