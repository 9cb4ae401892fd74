-- The seal of a proposal in its current state: an HMAC under the server key that the runtime
-- computes (the store only keeps it) over everything that decides what runs and for whom, the
-- verdict and its decider, and the claim. A runtime carries out an approval only when the seal
-- it reads back verifies, so a row written without the key runs nothing. Rows stored before
-- this migration have none: an approval of theirs not yet carried out ends `failed`.
ALTER TABLE agents_proposals ADD COLUMN seal TEXT NOT NULL DEFAULT '';

-- The audit tables refuse every statement that would replace a stored record, not only UPDATE
-- and DELETE: `INSERT OR REPLACE` deletes the row it collides with without firing DELETE
-- triggers, so an insert on a taken key is refused before it gets there.
CREATE TRIGGER agents_audit_no_replace BEFORE INSERT ON agents_audit
WHEN EXISTS (SELECT 1 FROM agents_audit WHERE stream = NEW.stream AND seq = NEW.seq)
BEGIN
    SELECT RAISE(ABORT, 'agents_audit is append-only: a record of this stream and seq exists, and is never replaced');
END;

-- A stream's head only moves forward, to a record the stream holds; it is never deleted or
-- replaced, so the head of an acknowledged chain cannot be wound back to drop its last records.
CREATE TRIGGER agents_audit_heads_no_delete BEFORE DELETE ON agents_audit_heads
BEGIN
    SELECT RAISE(ABORT, 'agents_audit_heads is append-only: DELETE is refused');
END;
CREATE TRIGGER agents_audit_heads_forward BEFORE UPDATE ON agents_audit_heads
WHEN NEW.stream IS NOT OLD.stream OR NEW.seq <= OLD.seq
  OR NOT EXISTS (SELECT 1 FROM agents_audit WHERE stream = NEW.stream AND seq = NEW.seq AND hash = NEW.hash)
BEGIN
    SELECT RAISE(ABORT, 'agents_audit_heads only moves forward, to a record the stream holds');
END;
CREATE TRIGGER agents_audit_heads_new BEFORE INSERT ON agents_audit_heads
WHEN EXISTS (SELECT 1 FROM agents_audit_heads WHERE stream = NEW.stream)
  OR NOT EXISTS (SELECT 1 FROM agents_audit WHERE stream = NEW.stream AND seq = NEW.seq AND hash = NEW.hash)
BEGIN
    SELECT RAISE(ABORT, 'agents_audit_heads: a stream has one head, at a record the stream holds, and it is never replaced');
END;
