-- 0002: a voided (revoked) approval no longer holds its tool call, so the call can be
-- asked again. One open (non-revoked) approval per (run, tool call) stays unique, by a
-- partial index (Postgres drops the table constraint in place).

ALTER TABLE approvals DROP CONSTRAINT approvals_run_id_tool_call_id_key;
CREATE UNIQUE INDEX approvals_open_per_call ON approvals (run_id, tool_call_id)
    WHERE status <> 'revoked';
CREATE INDEX approvals_by_run ON approvals (run_id, created_at);
