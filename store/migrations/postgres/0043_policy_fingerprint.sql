-- 0043: the fingerprint of the policy each approval was requested under (bot.policy:
-- `policy_fingerprint`), so that a decision taken under another policy (an operator's
-- shell without the bot's APPROVALS_POLICY) is refused naming both. NULL on the rows
-- requested before it: those are decided as before. Numbered apart from other work
-- under way, as store/schema.py allows.
ALTER TABLE approvals ADD COLUMN policy_fingerprint TEXT;
