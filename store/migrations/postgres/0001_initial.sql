-- 0001: runs with their encrypted state blobs, approvals, the audit chain, the ledger.
-- Times are UTC text 'YYYY-MM-DDTHH:MM:SS.ffffffZ' (fixed width, so they sort), as in
-- SQLite: the audit chain hashes the exact text stored, so a copy between engines
-- verifies unchanged.

CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    agent_name      TEXT NOT NULL,
    agent_version   TEXT NOT NULL,
    schema_version  TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN
                        ('running', 'paused', 'resuming', 'completed', 'failed', 'cancelled')),
    version         BIGINT NOT NULL,        -- compare-and-set token, bumped by every change
    state_version   BIGINT NOT NULL,        -- run version when the blob was written (in its AAD)
    key_id          TEXT NOT NULL,
    blob_digest     TEXT NOT NULL,          -- SHA-256 hex of the plaintext state JSON
    channel         TEXT,
    thread_ts       TEXT,
    requester       TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX runs_by_status ON runs (status, updated_at);
CREATE INDEX runs_by_thread ON runs (channel, thread_ts);

-- Blobs live apart from runs: a compare-and-set on runs rewrites a small row only.
CREATE TABLE run_blobs (
    run_id      TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
    key_id      TEXT NOT NULL,
    nonce       BYTEA NOT NULL,
    ciphertext  BYTEA NOT NULL
);

CREATE TABLE approvals (
    approval_id       TEXT PRIMARY KEY,
    run_id            TEXT NOT NULL REFERENCES runs (run_id),
    tool_call_id      TEXT NOT NULL,
    tool_name         TEXT NOT NULL,
    arguments_digest  TEXT NOT NULL,
    snapshot          TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN
                          ('pending', 'approved', 'rejected', 'expired', 'revoked')),
    requester         TEXT,
    decider           TEXT,
    reason            TEXT,
    message           TEXT,
    created_at        TEXT NOT NULL,
    decided_at        TEXT,
    expires_at        TEXT,
    revoked_at        TEXT,
    revoked_by        TEXT,
    slack_channel     TEXT,
    slack_ts          TEXT,
    CONSTRAINT approvals_run_id_tool_call_id_key UNIQUE (run_id, tool_call_id)
);
CREATE INDEX approvals_by_status ON approvals (status, created_at);
CREATE INDEX approvals_pending_expiry ON approvals (expires_at) WHERE status = 'pending';

-- Defence in depth: whatever the caller does, a decided approval stays decided
-- (the one exit is approved -> revoked, before the call executes).
CREATE FUNCTION approvals_terminal_is_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> NEW.status
       AND OLD.status <> 'pending'
       AND NOT (OLD.status = 'approved' AND NEW.status = 'revoked') THEN
        RAISE EXCEPTION 'approval status is final';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER approvals_terminal_is_final BEFORE UPDATE OF status ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_terminal_is_final();

CREATE TABLE audit_events (
    seq          BIGINT PRIMARY KEY,
    kind         TEXT NOT NULL,
    actor        TEXT,
    run_id       TEXT,
    approval_id  TEXT,
    detail       TEXT NOT NULL,            -- canonical JSON, as hashed
    at           TEXT NOT NULL,
    prev_hash    TEXT NOT NULL,
    hash         TEXT NOT NULL
);
CREATE INDEX audit_by_at ON audit_events (at);
CREATE INDEX audit_by_run ON audit_events (run_id);
CREATE INDEX audit_by_approval ON audit_events (approval_id);

-- The chain head, advanced by the insert trigger: deleting the newest events leaves the
-- head pointing past the end of the log, which verify reports. Appenders read it
-- FOR UPDATE, so concurrent appenders (any number of processes) form one chain.
CREATE TABLE audit_head (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    seq   BIGINT NOT NULL,
    hash  TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

CREATE FUNCTION audit_head_advance() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
    RETURN NULL;
END $$;
CREATE TRIGGER audit_head_advance AFTER INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_head_advance();

CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only';
END $$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();

CREATE TABLE ledger (
    execution_key      TEXT PRIMARY KEY,
    arguments_digest   TEXT NOT NULL,
    run_id             TEXT NOT NULL,
    tool_call_id       TEXT NOT NULL,
    tool_name          TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN ('executing', 'succeeded',
                           'failed_retryable', 'failed_terminal', 'uncertain')),
    attempt            INTEGER NOT NULL,
    lease_owner        TEXT,
    lease_expires_at   TEXT,
    lease_version      BIGINT NOT NULL,    -- fencing token: a write must name the current one
    result_key_id      TEXT,
    result_nonce       BYTEA,
    result_ciphertext  BYTEA,
    is_error           INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL
);
CREATE INDEX ledger_by_call ON ledger (run_id, tool_call_id);
CREATE INDEX ledger_by_state ON ledger (state);
