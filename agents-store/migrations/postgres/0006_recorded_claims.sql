-- When a proposal's final record was last claimed (or the claim taken over or renewed), and
-- when that record was marked written. A claim without a mark, older than the settle lease,
-- is the claim of a holder that may have died before writing: a resumption takes it over.
ALTER TABLE agents_proposals ADD COLUMN held_at TIMESTAMPTZ, ADD COLUMN recorded_at TIMESTAMPTZ;
-- The claims made before this version were followed by their records.
UPDATE agents_proposals SET held_at = COALESCE(claimed_at, settled_at), recorded_at = COALESCE(claimed_at, settled_at)
    WHERE claimed_by IS NOT NULL OR settled_by IS NOT NULL;
CREATE INDEX agents_proposals_unrecorded ON agents_proposals (held_at) WHERE held_at IS NOT NULL AND recorded_at IS NULL;
CREATE INDEX agents_proposals_recorded ON agents_proposals (recorded_at) WHERE recorded_at IS NOT NULL;
