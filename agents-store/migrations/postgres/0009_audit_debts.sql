-- The final records an audit stream owes: a call's `proposed` record opens a debt, its final
-- record (executed, failed, rejected, skipped, denied) pays it, each in the transaction that
-- appends the record, so the debt is exactly as durable as the record. A debt left unpaid (the
-- final record's write failed, the node died) is claimed by one resuming node (`held_by`,
-- `held_at`), which writes the final record. Records appended before this migration open no
-- debt. A debt is keyed by the call and its run: a read call's id is the model provider's,
-- which runs reuse; an action's is minted by the runtime, and its final record (which a later
-- turn of the session may write) pays it by the call id alone.
CREATE TABLE agents_audit_debts (
    stream TEXT NOT NULL,
    call_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    line TEXT NOT NULL,
    owed_since TIMESTAMPTZ NOT NULL DEFAULT now(),
    held_by TEXT,
    held_at TIMESTAMPTZ,
    PRIMARY KEY (stream, call_id, run_id)
);
CREATE INDEX agents_audit_debts_since ON agents_audit_debts (stream, owed_since);

-- A fence on each stream's head: a node that lost the reply of an append reads it back after
-- moving the fence on (under the head's row lock), and an append sealed after a head it read
-- before (`agents_audit_advance_fenced`, one pipeline) then fails with SQLSTATE 40001 and
-- stores nothing, so a transaction of the lost connection that reaches the server late cannot
-- store what was answered as not stored.
ALTER TABLE agents_audit_heads ADD COLUMN fence BIGINT NOT NULL DEFAULT 0;
CREATE FUNCTION agents_audit_advance_fenced(
    p_stream TEXT, p_from BIGINT, p_from_hash TEXT, p_fence BIGINT, p_to BIGINT, p_to_hash TEXT
)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agents_audit_heads SET seq = p_to, hash = p_to_hash
        WHERE stream = p_stream AND seq = p_from AND hash = p_from_hash AND fence = p_fence;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'audit stream % is no longer at record % (fence %)', p_stream, p_from, p_fence
            USING ERRCODE = '40001';
    END IF;
END
$$;
