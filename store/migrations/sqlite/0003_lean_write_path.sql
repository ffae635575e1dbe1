-- 0003: fewer pages written per decision. Every index on the append-only audit log cost
-- one more page in every commit, and its only readers are operator exports that read
-- the log in order anyway; the status index on approvals moved a row between two index
-- regions on every decision, while the one hot status query lists pending approvals,
-- which the partial pending index already holds. (bench/store_decisions.py: decisions/s.)

DROP INDEX audit_by_at;
DROP INDEX audit_by_run;
DROP INDEX audit_by_approval;
DROP INDEX approvals_by_status;
