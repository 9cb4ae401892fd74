-- Who claimed a rejected proposal's final record, and when (a proposal is over, and may be
-- pruned after the retention, once its execution or its record is claimed).
ALTER TABLE agents_proposals ADD COLUMN settled_by TEXT, ADD COLUMN settled_at TIMESTAMPTZ;
-- The runs that rejected proposals before this version wrote their final records themselves.
UPDATE agents_proposals SET settled_by = 'migrated', settled_at = now() WHERE verdict = 'rejected';
UPDATE agents_proposals SET claimed_at = now() WHERE claimed_by IS NOT NULL AND claimed_at IS NULL;
CREATE INDEX agents_proposals_unsettled ON agents_proposals (ord)
    WHERE (verdict = 'approved' AND claimed_by IS NULL) OR (verdict = 'rejected' AND settled_by IS NULL) OR verdict IS NULL;
CREATE INDEX agents_proposals_over ON agents_proposals ((COALESCE(claimed_at, settled_at)));

-- Budgets: a cap per organisation (user_id '') and per user, and each one's spend and the
-- headroom its calls in flight hold. A reservation is one conditional UPDATE per account,
-- which PostgreSQL re-evaluates on the newest row after waiting for a concurrent writer.
CREATE TABLE agents_budget_caps (
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    cap_usd DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE TABLE agents_budget_accounts (
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    spend_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    held_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    holds INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, user_id)
);
