-- What the runtime keeps beside a proposal (role, agent, risk, when, and what carrying out
-- the approved call needs once the run that proposed it is gone).
ALTER TABLE agents_proposals ADD COLUMN detail JSONB NOT NULL DEFAULT '{}';
CREATE INDEX agents_proposals_unclaimed ON agents_proposals (ord) WHERE verdict = 'approved' AND claimed_by IS NULL;
