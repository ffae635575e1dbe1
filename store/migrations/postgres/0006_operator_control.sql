-- 0006: operator control. Where a run came from (`origin`), the task as people may see
-- it (redacted and clipped), when retention purged a finished run's content
-- (`purged_at`), standing decisions, and an index that lists runs newest first by keyset.

ALTER TABLE runs ADD COLUMN origin TEXT NOT NULL DEFAULT 'slack';
ALTER TABLE runs ADD COLUMN task TEXT;
ALTER TABLE runs ADD COLUMN purged_at TEXT;
-- Runs the terminal demo made before runs had an origin: its requester, and no channel.
UPDATE runs SET origin = 'terminal' WHERE requester = 'demo-requester' AND channel IS NULL;
CREATE INDEX runs_by_update ON runs (updated_at, run_id);

-- One row per decision that was made to stand for the rest of its run; at most one
-- active (unrevoked) per run and tool.
CREATE TABLE standing_decisions (
    approval_id    TEXT PRIMARY KEY REFERENCES approvals (approval_id),  -- the decision
    run_id         TEXT NOT NULL REFERENCES runs (run_id),
    tool_name      TEXT NOT NULL,
    decision       TEXT NOT NULL CHECK (decision IN ('approved', 'rejected')),
    decider        TEXT NOT NULL,
    reason         TEXT,
    message        TEXT,                  -- on reject: what the model is told each time
    created_at     TEXT NOT NULL,
    revoked_at     TEXT,
    revoked_by     TEXT,
    revoke_reason  TEXT
);
CREATE UNIQUE INDEX standing_active ON standing_decisions (run_id, tool_name)
    WHERE revoked_at IS NULL;
