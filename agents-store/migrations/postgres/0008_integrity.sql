-- The seal of a proposal in its current state: an HMAC under the server key that the runtime
-- computes (the store only keeps it) over everything that decides what runs and for whom, the
-- verdict and its decider, and the claim. A runtime carries out an approval only when the seal
-- it reads back verifies, so a row written without the key runs nothing. Rows stored before
-- this migration have none: an approval of theirs not yet carried out ends `failed`.
ALTER TABLE agents_proposals ADD COLUMN seal TEXT NOT NULL DEFAULT '';

-- A stream's head only moves forward (or is locked in place by an update that changes
-- nothing); it is never deleted, truncated or moved back, so the head of an acknowledged
-- chain cannot be wound back. The records themselves refuse UPDATE, DELETE and TRUNCATE
-- (migration 1), which covers upserts: `INSERT ... ON CONFLICT DO UPDATE` fires the UPDATE
-- trigger, and a plain insert on a taken key is a primary-key violation.
CREATE FUNCTION agents_audit_heads_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.stream = OLD.stream AND (NEW.seq > OLD.seq OR (NEW.seq = OLD.seq AND NEW.hash = OLD.hash)) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'agents_audit_heads only moves forward: % is refused', TG_OP;
END
$$;
CREATE TRIGGER agents_audit_heads_forward BEFORE UPDATE OR DELETE ON agents_audit_heads
    FOR EACH ROW EXECUTE FUNCTION agents_audit_heads_forward();
CREATE TRIGGER agents_audit_heads_no_truncate BEFORE TRUNCATE ON agents_audit_heads
    FOR EACH STATEMENT EXECUTE FUNCTION agents_audit_heads_forward();
