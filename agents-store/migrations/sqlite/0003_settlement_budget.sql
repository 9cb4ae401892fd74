-- When a proposal was stored (a gone run's undecided proposal ends once its confirmation
-- window passed), who claimed a rejected proposal's final record, and when a proposal was
-- over (its final record claimed), for pruning. Times in milliseconds since the Unix epoch.
ALTER TABLE agents_proposals ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents_proposals ADD COLUMN settled_by TEXT;
ALTER TABLE agents_proposals ADD COLUMN over_at INTEGER;
-- The runs that rejected proposals before this version wrote their final records themselves.
UPDATE agents_proposals SET settled_by = 'migrated' WHERE verdict = 'rejected';
UPDATE agents_proposals SET over_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000
    WHERE settled_by IS NOT NULL OR claimed_by IS NOT NULL;
CREATE INDEX agents_proposals_unsettled ON agents_proposals (ord)
    WHERE (verdict = 'approved' AND claimed_by IS NULL) OR (verdict = 'rejected' AND settled_by IS NULL) OR verdict IS NULL;
CREATE INDEX agents_proposals_over ON agents_proposals (over_at) WHERE over_at IS NOT NULL;

-- Budgets: a cap per organisation (user_id '') and per user, and each one's spend and the
-- headroom its calls in flight hold. A reservation is one conditional UPDATE per account.
CREATE TABLE agents_budget_caps (
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    cap_usd REAL NOT NULL,
    PRIMARY KEY (org_id, user_id)
) STRICT;
CREATE TABLE agents_budget_accounts (
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    spend_usd REAL NOT NULL DEFAULT 0,
    held_usd REAL NOT NULL DEFAULT 0,
    holds INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, user_id)
) STRICT;
