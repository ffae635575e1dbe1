-- 0007: reserved (approvals keyed by execution key land under this number). Nothing
-- changes here; this file keeps the ledger numbered without gaps until then.
SELECT 1;
