-- 0040: reaching approvers. Who is away and who stands in for them, the escalation
-- steps each approval was requested with, and the direct-message copies of each card.
-- Self-contained: it depends only on the approvals table (0001) and the seal columns'
-- shape (0010); numbered apart from other work under way, as store/schema.py allows.

-- An approver away until `until`, with the person who stands in for them (NULL: away
-- with nobody standing in: their direct messages are not sent). At most one open row
-- per person; `ended_at` closes it early (`/approvals back`, or a newer one). Sealed
-- (store/seals.py) over who, for whom and when: a row written without the keys makes
-- nobody eligible.
CREATE TABLE stand_ins (
    away_user    TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    stand_in     TEXT,
    until        TEXT NOT NULL,
    ended_at     TEXT,
    ended_by     TEXT,
    seal_key_id  TEXT,
    seal         TEXT,
    PRIMARY KEY (away_user, created_at)
);
CREATE UNIQUE INDEX stand_ins_open ON stand_ins (away_user) WHERE ended_at IS NULL;
CREATE INDEX stand_ins_by_stand_in ON stand_ins (stand_in, until);

-- The escalation steps of an approval, fixed (and sealed) when it was requested: from
-- `due_at` on, `approvers` (Slack ids, space separated) may decide it too. The sweeper
-- fires each step once (`fired_at`): 'escalated' when it told people, 'skipped' when the
-- approval had closed first.
CREATE TABLE approval_escalations (
    approval_id  TEXT NOT NULL REFERENCES approvals (approval_id),
    step         INTEGER NOT NULL CHECK (step >= 1),
    due_at       TEXT NOT NULL,
    approvers    TEXT NOT NULL,
    fired_at     TEXT,
    outcome      TEXT CHECK (outcome IN ('escalated', 'skipped')),
    seal_key_id  TEXT,
    seal         TEXT,
    PRIMARY KEY (approval_id, step)
);
CREATE INDEX approval_escalations_due ON approval_escalations (due_at) WHERE fired_at IS NULL;

-- A card's copy in one person's direct messages: planned (claimed by the worker that
-- sends it until `claimed_until`), then posted (`channel`, `ts`), so that a decision
-- updates every copy and a copy whose worker died is sent by another.
CREATE TABLE approval_copies (
    approval_id    TEXT NOT NULL REFERENCES approvals (approval_id),
    recipient      TEXT NOT NULL,
    stands_in_for  TEXT,
    step           INTEGER NOT NULL DEFAULT 0,
    planned_at     TEXT NOT NULL,
    claimed_until  TEXT,
    attempts       INTEGER NOT NULL DEFAULT 0,
    channel        TEXT,
    ts             TEXT,
    posted_at      TEXT,
    PRIMARY KEY (approval_id, recipient)
);
CREATE INDEX approval_copies_unsent ON approval_copies (claimed_until) WHERE ts IS NULL;
