-- When a proposal's final record was marked written (milliseconds since the Unix epoch). A
-- claim (`over_at`, renewed on a take-over) without it, older than the settle lease, is the
-- claim of a holder that may have died before writing: a resumption takes it over.
ALTER TABLE agents_proposals ADD COLUMN recorded_at INTEGER;
-- The claims made before this version were followed by their records.
UPDATE agents_proposals SET recorded_at = over_at WHERE over_at IS NOT NULL;
CREATE INDEX agents_proposals_unrecorded ON agents_proposals (over_at) WHERE over_at IS NOT NULL AND recorded_at IS NULL;
CREATE INDEX agents_proposals_recorded ON agents_proposals (recorded_at) WHERE recorded_at IS NOT NULL;
