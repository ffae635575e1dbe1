-- 0005: who has read an approval's arguments in full, per digest. The primary key makes
-- recording a read twice a no-op, and its prefix finds one person's read of one digest.

CREATE TABLE approval_full_reads (
    approval_id  TEXT NOT NULL REFERENCES approvals (approval_id),
    reader       TEXT NOT NULL,
    digest       TEXT NOT NULL,
    at           TEXT NOT NULL,
    PRIMARY KEY (approval_id, reader, digest)
);
