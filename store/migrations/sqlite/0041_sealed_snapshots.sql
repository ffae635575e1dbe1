-- 0041: the review snapshot is sealed. What an approver is shown of a call (its redacted
-- snapshot) carries an HMAC-SHA256 made with a key derived from the key ring over the
-- approval, its digest and the snapshot's SHA-256 (store/seals.py, purpose "snapshot"),
-- re-made whenever the store writes the snapshot. A snapshot whose seal does not verify
-- is never shown, and its call is never decided nor run. The store seals the snapshots
-- already there when it first opens the database after this migration
-- (store/sql/snapshots.py, audited `snapshots_sealed`); this file only adds the columns,
-- so it depends on no migration but 0001 (approvals).

ALTER TABLE approvals ADD COLUMN snapshot_seal_key_id TEXT;
ALTER TABLE approvals ADD COLUMN snapshot_seal TEXT;
