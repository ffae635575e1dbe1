-- 0004: approval governance. Votes (N-of-M quorum: each person counts once per digest
-- of the arguments), the quorum fixed at request time, one reminder per approval, the
-- revocation's reason, and the indexes the people-facing reads need: the pending list
-- pages by (created_at, approval_id) over a partial index that holds pending rows only;
-- a requester's list and recent decisions each have their own.

CREATE TABLE approval_votes (
    approval_id  TEXT NOT NULL REFERENCES approvals (approval_id),
    voter        TEXT NOT NULL,
    decision     TEXT NOT NULL CHECK (decision IN ('approved', 'rejected')),
    digest       TEXT NOT NULL,
    reason       TEXT,
    at           TEXT NOT NULL,
    PRIMARY KEY (approval_id, voter, digest)
);

ALTER TABLE approvals ADD COLUMN required_approvals INTEGER NOT NULL DEFAULT 1
    CHECK (required_approvals >= 1);
ALTER TABLE approvals ADD COLUMN remind_at TEXT;
ALTER TABLE approvals ADD COLUMN reminded_at TEXT;
ALTER TABLE approvals ADD COLUMN revoke_reason TEXT;
ALTER TABLE approvals ADD COLUMN amended_by TEXT;   -- who changed the arguments (approve with changes)

CREATE INDEX approvals_pending_page ON approvals (created_at, approval_id)
    WHERE status = 'pending';
CREATE INDEX approvals_pending_reminders ON approvals (remind_at)
    WHERE status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL;
CREATE INDEX approvals_by_requester ON approvals (requester, created_at);
CREATE INDEX approvals_by_decision ON approvals (decided_at) WHERE decided_at IS NOT NULL;
