-- 0008: several workers on one database. A run being worked on (`running` or `resuming`)
-- has a lease: the worker that holds it, until when (it renews it while it works), and a
-- fencing token that moves on at every claim and every release, so a worker that lost
-- the run cannot write for it any more. Request memory: what Slack sent recently (a
-- signed request, an event id), so a replay or a redelivery reaching any worker is
-- answered once.

CREATE TABLE run_leases (
    run_id      TEXT PRIMARY KEY REFERENCES runs (run_id),
    owner       TEXT,              -- the worker holding the run (NULL: nobody)
    expires_at  TEXT,              -- until when, unless renewed (NULL: nobody)
    token       INTEGER NOT NULL   -- the fencing token; only ever grows
);
CREATE INDEX run_leases_by_expiry ON run_leases (expires_at) WHERE owner IS NOT NULL;

CREATE TABLE request_memory (
    request_key  TEXT PRIMARY KEY,  -- kind:digest (never a request's content)
    expires_at   TEXT NOT NULL
);
CREATE INDEX request_memory_by_expiry ON request_memory (expires_at);
