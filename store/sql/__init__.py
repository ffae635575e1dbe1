"""The concept parts every backend runs: runs, leases, approvals, votes, standing
decisions, the audit log, the ledger, cancellation, retention and key rotation, one
class each.

Each part holds its concept's rules (what it refuses, by name), its SQL and its write
transactions as bodies (store.tx) that a backend's database drives; what several parts
share lives in store/ (store.rows, store.audit, store.seals, store.crypto). A backend
package (store/sqlite/, store/postgres/) brings its connections, how it reads the shared
SQL, and its migrations.
"""
