-- 0009: audited writes commit without touching the chain's head. Audit events are
-- queued by the transaction that causes them and linked into the chain afterwards, in
-- queue order (store.sql.audit.link_pending). SQLite's one writer links at the end of
-- every write transaction, so this queue is empty between transactions.

CREATE TABLE audit_queue (
    id           INTEGER PRIMARY KEY,  -- the order events are linked in
    kind         TEXT NOT NULL,
    actor        TEXT,
    run_id       TEXT,
    approval_id  TEXT,
    detail       TEXT NOT NULL,        -- canonical JSON, as it will be hashed
    at           TEXT NOT NULL
);
