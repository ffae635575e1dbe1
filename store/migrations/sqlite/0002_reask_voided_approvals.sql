-- 0002: a voided (revoked) approval no longer holds its tool call, so the call can be
-- asked again. The service voids an approval when the arguments in the stored state no
-- longer match the approved digest, and then requests a fresh decision for the same
-- call. One open (non-revoked) approval per (run, tool call) stays unique, by a partial
-- index; SQLite cannot drop a table constraint, so the table is rebuilt.

CREATE TABLE approvals_0002 (
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
    slack_ts          TEXT
);

INSERT INTO approvals_0002 (approval_id, run_id, tool_call_id, tool_name, arguments_digest,
    snapshot, status, requester, decider, reason, message, created_at, decided_at,
    expires_at, revoked_at, revoked_by, slack_channel, slack_ts)
SELECT approval_id, run_id, tool_call_id, tool_name, arguments_digest, snapshot, status,
    requester, decider, reason, message, created_at, decided_at, expires_at, revoked_at,
    revoked_by, slack_channel, slack_ts
FROM approvals;

DROP TABLE approvals;

ALTER TABLE approvals_0002 RENAME TO approvals;

CREATE UNIQUE INDEX approvals_open_per_call ON approvals (run_id, tool_call_id)
    WHERE status <> 'revoked';
CREATE INDEX approvals_by_run ON approvals (run_id, created_at);
CREATE INDEX approvals_by_status ON approvals (status, created_at);
CREATE INDEX approvals_pending_expiry ON approvals (expires_at) WHERE status = 'pending';

CREATE TRIGGER approvals_terminal_is_final
BEFORE UPDATE OF status ON approvals
WHEN OLD.status <> NEW.status
 AND NOT (OLD.status = 'pending')
 AND NOT (OLD.status = 'approved' AND NEW.status = 'revoked')
BEGIN
    SELECT RAISE(ABORT, 'approval status is final');
END;
