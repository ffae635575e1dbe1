-- 0007: approvals keyed by the call's execution key, and runs that say which engine
-- wrote their state and whether they wait for a migration.
--
-- An execution key names one call of one run for good (the run, the model turn that
-- asked for it, the provider's call id). One open (non-revoked) approval per (run,
-- execution key). Rows from before carry 'call:<tool call id>', which keeps them unique
-- exactly as before.
--
-- Runs: `engine`, `engine_version` and `engine_schema_version` name the agent engine
-- of an SDK run (NULL for runs of the bot's own run core); `needs_migration` is why a
-- paused run cannot be resumed by this deployment, NULL when it can.

ALTER TABLE approvals ADD COLUMN execution_key TEXT NOT NULL DEFAULT '';
UPDATE approvals SET execution_key = 'call:' || tool_call_id;
DROP INDEX approvals_open_per_call;
CREATE UNIQUE INDEX approvals_open_per_key ON approvals (run_id, execution_key)
    WHERE status <> 'revoked';

ALTER TABLE runs ADD COLUMN engine TEXT;
ALTER TABLE runs ADD COLUMN engine_version TEXT;
ALTER TABLE runs ADD COLUMN engine_schema_version TEXT;
ALTER TABLE runs ADD COLUMN needs_migration TEXT;
