-- Signed checkpoints of audit chains, published by the chains' writers (a keyed JSONL or
-- SQLite log on another host, say): the second place a verifier compares a log with. Each row
-- keeps the checkpoint's exact canonical line, which is what its Ed25519 signature covers;
-- `seq` and `hash` repeat what the line says, for lookups and the uniqueness of a record's
-- checkpoint.
CREATE TABLE agents_audit_checkpoints (
    stream TEXT NOT NULL,
    seq BIGINT NOT NULL CHECK (seq >= 1),
    hash TEXT NOT NULL,
    line TEXT NOT NULL,
    published_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, seq)
);
-- Append-only, like the audit table: a checkpoint that could be edited or deleted would let
-- whoever cuts the log also cut the evidence. Give the writer's role INSERT and SELECT only.
CREATE FUNCTION agents_audit_checkpoints_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'agents_audit_checkpoints is append-only: % is refused', TG_OP;
END
$$;
CREATE TRIGGER agents_audit_checkpoints_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON agents_audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION agents_audit_checkpoints_append_only();
