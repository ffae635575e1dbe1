-- 0003: fewer pages written per decision. The indexes on the append-only audit log
-- serve only operator exports that read the log in order anyway; the status index on
-- approvals moved a row between index regions on every decision, while the one hot
-- status query lists pending approvals, which the partial pending index holds.

DROP INDEX audit_by_at;
DROP INDEX audit_by_run;
DROP INDEX audit_by_approval;
DROP INDEX approvals_by_status;
