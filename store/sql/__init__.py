"""The concept parts every engine runs: runs, approvals, votes, standing decisions, the
audit log, the ledger, cancellation, retention and key rotation, one class each.

Each part holds the SQL of its concept and its write transactions as bodies (store.tx)
that an engine's database drives; the rules beside them live in store/ (store.runs,
store.approvals, store.ledger, store.audit). An engine package (store/sqlite/,
store/postgres/) brings its connections, how it reads the shared SQL, and its
migrations.
"""
