-- Confirmation tokens: single use is `redeemed_at IS NULL` in the redeeming UPDATE.
CREATE TABLE agents_tokens (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    args_mac TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    redeemed_at TIMESTAMPTZ
);
CREATE INDEX agents_tokens_session ON agents_tokens (session_id);

-- One row per user that ever held a run slot: acquiring a slot locks it, which serialises
-- the count-and-insert of one user across every node.
CREATE TABLE agents_slot_owners (
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE TABLE agents_run_slots (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    lease_until TIMESTAMPTZ NOT NULL
);
CREATE INDEX agents_run_slots_owner ON agents_run_slots (org_id, user_id);

CREATE TABLE agents_proposals (
    call_id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    run_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    title TEXT NOT NULL,
    args JSONB NOT NULL,
    args_mac TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    verdict TEXT CHECK (verdict IN ('approved', 'rejected')),
    reason TEXT,
    decided_at TIMESTAMPTZ,
    claimed_by TEXT,
    claimed_at TIMESTAMPTZ,
    CHECK (claimed_by IS NULL OR verdict = 'approved')
);
CREATE INDEX agents_proposals_pending ON agents_proposals (org_id, user_id, ord) WHERE verdict IS NULL;

CREATE TABLE agents_sessions (
    session_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    history JSONB NOT NULL,
    digest JSONB NOT NULL,
    used_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX agents_sessions_used ON agents_sessions (used_at);

-- Audit chains: the head row of a stream is locked by every append to it, in the
-- transaction that inserts the records, so the stream stays one chain.
CREATE TABLE agents_audit_heads (
    stream TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE agents_audit (
    stream TEXT NOT NULL,
    seq BIGINT NOT NULL CHECK (seq >= 1),
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (stream, seq)
);
CREATE FUNCTION agents_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'agents_audit is append-only: % is refused', TG_OP;
END
$$;
CREATE TRIGGER agents_audit_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON agents_audit
    FOR EACH STATEMENT EXECUTE FUNCTION agents_audit_append_only();

-- Advances a stream's head from exactly (p_from, p_from_hash), holding the head row's lock
-- until the transaction ends; a head that moved on (another node appended) is refused with
-- SQLSTATE 40001, so the caller's transaction stores nothing and it re-reads the head.
CREATE FUNCTION agents_audit_advance(p_stream TEXT, p_from BIGINT, p_from_hash TEXT, p_to BIGINT, p_to_hash TEXT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agents_audit_heads SET seq = p_to, hash = p_to_hash
        WHERE stream = p_stream AND seq = p_from AND hash = p_from_hash;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'audit stream % is no longer at record %', p_stream, p_from USING ERRCODE = '40001';
    END IF;
END
$$;
