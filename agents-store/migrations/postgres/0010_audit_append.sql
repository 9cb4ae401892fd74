-- One audit batch in one statement: the stream's head advanced from exactly where the writer
-- sealed the batch (under its fence, holding the head row's lock until the transaction ends;
-- a head that moved on is refused with SQLSTATE 40001 and nothing is stored), the records
-- inserted, the debts of its `proposed` records opened and those its final records pay
-- closed. Sent alone it is its own transaction: one round trip and one commit per batch,
-- where a transaction of five statements (BEGIN ... COMMIT) cost the server five.
CREATE FUNCTION agents_audit_append(
    p_stream TEXT, p_from BIGINT, p_from_hash TEXT, p_fence BIGINT, p_to BIGINT, p_to_hash TEXT,
    p_seqs BIGINT[], p_prevs TEXT[], p_hashes TEXT[], p_lines TEXT[],
    p_owed TEXT[], p_owed_runs TEXT[], p_owed_lines TEXT[],
    p_paid_calls TEXT[], p_paid TEXT[], p_paid_runs TEXT[]
)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- First, so a second writer waits here for the lock, never on a record's key.
    PERFORM agents_audit_advance_fenced(p_stream, p_from, p_from_hash, p_fence, p_to, p_to_hash);
    INSERT INTO agents_audit (stream, seq, prev_hash, hash, line)
        SELECT p_stream, * FROM unnest(p_seqs, p_prevs, p_hashes, p_lines);
    IF cardinality(p_owed) > 0 THEN
        INSERT INTO agents_audit_debts (stream, call_id, run_id, line)
            SELECT p_stream, * FROM unnest(p_owed, p_owed_runs, p_owed_lines) ON CONFLICT DO NOTHING;
    END IF;
    IF cardinality(p_paid_calls) > 0 OR cardinality(p_paid) > 0 THEN
        DELETE FROM agents_audit_debts WHERE stream = p_stream AND (call_id = ANY(p_paid_calls)
            OR (call_id, run_id) IN (SELECT * FROM unnest(p_paid, p_paid_runs)));
    END IF;
END
$$;
