-- 0010: decision seals. Each vote, standing decision and approval request carries an
-- HMAC-SHA256 made with a key derived from the key ring (store/seals.py) over what it
-- means, and the id of the ring key it was made under. A row without a seal, or whose
-- seal does not verify, never counts toward a call running. The store seals the rows
-- of calls still open when it first opens the database after this migration
-- (store/sql/seals.py, audited `legacy_sealed`); this file only adds the columns, so it
-- depends on no other migration but 0004 (votes) and 0006 (standing decisions).

ALTER TABLE approval_votes ADD COLUMN seal_key_id TEXT;
ALTER TABLE approval_votes ADD COLUMN seal TEXT;
ALTER TABLE standing_decisions ADD COLUMN seal_key_id TEXT;
ALTER TABLE standing_decisions ADD COLUMN seal TEXT;
ALTER TABLE approvals ADD COLUMN seal_key_id TEXT;
ALTER TABLE approvals ADD COLUMN seal TEXT;
