-- The seal of a proposal in its current state: an HMAC under the server key that the runtime
-- computes (the store only keeps it) over everything that decides what runs and for whom, the
-- verdict and its decider, and the claim. A runtime carries out an approval only when the seal
-- it reads back verifies, so a row written without the key runs nothing. Rows stored before
-- this migration have none: an approval of theirs not yet carried out ends `failed`.
ALTER TABLE agents_proposals ADD COLUMN seal TEXT NOT NULL DEFAULT '';
