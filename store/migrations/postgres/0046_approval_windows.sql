-- 0046: approval windows. An approved call whose tool allows it (`allow_window`) may
-- open a window: for `lasts_seconds` its approver's say covers later calls of the same
-- tool whose `match_fields` arguments are equal. Self-contained: it depends only on the
-- approvals table (0001) and the seal columns' shape (0010).
--
-- The matched values are never stored: `match_digest` is a keyed MAC of them (the seal
-- key `seal_key_id` names, store/seals.py), so a database reader cannot learn or confirm
-- them, and a later call matches only when the same MAC of its own values comes out.
-- The seal binds the window, its tool, match fields and digest, approver, opening and
-- expiry and the policy's length: a row written, extended or copied without the keys
-- covers nothing. Revoking only takes away, so it is not sealed.
CREATE TABLE approval_windows (
    window_id      TEXT PRIMARY KEY REFERENCES approvals (approval_id),
    run_id         TEXT NOT NULL,
    tool_name      TEXT NOT NULL,
    match_fields   TEXT NOT NULL,
    match_digest   TEXT NOT NULL,
    decider        TEXT NOT NULL,
    reason         TEXT,
    created_at     TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    lasts_seconds  INTEGER NOT NULL CHECK (lasts_seconds > 0),
    revoked_at     TEXT,
    revoked_by     TEXT,
    revoke_reason  TEXT,
    seal_key_id    TEXT,
    seal           TEXT
);
CREATE INDEX approval_windows_open ON approval_windows (tool_name, expires_at)
    WHERE revoked_at IS NULL;
CREATE INDEX approval_windows_by_expiry ON approval_windows (expires_at)
    WHERE revoked_at IS NULL;
