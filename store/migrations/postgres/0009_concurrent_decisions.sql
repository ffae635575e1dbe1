-- 0009: decisions of several processes commit side by side. Audit events are queued by
-- the transaction that causes them and linked into the chain afterwards, in queue order
-- (store.sql.audit.link_pending), instead of each transaction reading the chain's head
-- FOR UPDATE and holding it to its commit: every audited write of every replica went
-- through that one row lock, one commit at a time. Linkers take turns on the head.
-- Replicas still on 0008's code append to audit_events directly under the head lock,
-- which links correctly alongside (a rolling upgrade is safe both ways).

CREATE TABLE audit_queue (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- the link order
    kind         TEXT NOT NULL,
    actor        TEXT,
    run_id       TEXT,
    approval_id  TEXT,
    detail       TEXT NOT NULL,        -- canonical JSON, as it will be hashed
    at           TEXT NOT NULL
);

-- The head moves once per INSERT statement (a link inserts a batch), not once per row.
DROP TRIGGER audit_head_advance ON audit_events;
CREATE FUNCTION audit_head_advance_to_last() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE audit_head SET seq = newest.seq, hash = newest.hash
    FROM (SELECT seq, hash FROM added ORDER BY seq DESC LIMIT 1) AS newest
    WHERE audit_head.id = 1;
    RETURN NULL;
END $$;
CREATE TRIGGER audit_head_advance AFTER INSERT ON audit_events
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION audit_head_advance_to_last();
DROP FUNCTION audit_head_advance();

-- The final-status rule is tested by the trigger's WHEN, in the executor, as SQLite's
-- trigger does: the function now runs only for a change it refuses, not for every
-- status change (every decision paid a PL/pgSQL call for nothing).
DROP TRIGGER approvals_terminal_is_final ON approvals;
CREATE TRIGGER approvals_terminal_is_final BEFORE UPDATE OF status ON approvals
    FOR EACH ROW
    WHEN (OLD.status <> NEW.status
          AND OLD.status <> 'pending'
          AND NOT (OLD.status = 'approved' AND NEW.status = 'revoked'))
    EXECUTE FUNCTION approvals_terminal_is_final();
