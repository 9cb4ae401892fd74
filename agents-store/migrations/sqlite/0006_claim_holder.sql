-- Who holds a proposal's claim now: its claimant, or the node that took it over last. The holder
-- renews the claim (`over_at`) while it carries it out, with one conditional update that holds
-- only while it is still the holder, so a live holder's claim never lapses.
ALTER TABLE agents_proposals ADD COLUMN held_by TEXT;
UPDATE agents_proposals SET held_by = COALESCE(claimed_by, settled_by) WHERE over_at IS NOT NULL;
