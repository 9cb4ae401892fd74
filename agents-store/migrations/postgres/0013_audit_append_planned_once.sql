-- The append of migration 11, planned once per connection instead of at every call, and in
-- one function instead of two. Its statements take arrays as parameters, for which the
-- server kept planning each call afresh (a custom plan costs less by its estimate than the
-- generic one): planning was about a quarter of the server's time for a batch of one record.
-- `plan_cache_mode = force_generic_plan` holds only while the function runs. The head's
-- advance (`agents_audit_advance_fenced`, migration 9) is now the function's first statement
-- rather than a second function it calls, so that function is dropped. What the append
-- stores, refuses and locks is unchanged.
CREATE OR REPLACE FUNCTION agents_audit_append(
    p_stream TEXT, p_from BIGINT, p_from_hash TEXT, p_fence BIGINT, p_to BIGINT, p_to_hash TEXT,
    p_seqs BIGINT[], p_prevs TEXT[], p_hashes TEXT[], p_lines TEXT[],
    p_owed TEXT[], p_owed_runs TEXT[], p_owed_seqs BIGINT[],
    p_paid_calls TEXT[], p_paid TEXT[], p_paid_runs TEXT[]
)
RETURNS void LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    -- First, so a second writer waits here for the head's lock, never on a record's key.
    UPDATE agents_audit_heads SET seq = p_to, hash = p_to_hash
        WHERE stream = p_stream AND seq = p_from AND hash = p_from_hash AND fence = p_fence;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'audit stream % is no longer at record % (fence %)', p_stream, p_from, p_fence
            USING ERRCODE = '40001';
    END IF;
    INSERT INTO agents_audit (stream, seq, prev_hash, hash, line)
        SELECT p_stream, * FROM unnest(p_seqs, p_prevs, p_hashes, p_lines);
    IF cardinality(p_owed) > 0 THEN
        IF NOT (p_owed_seqs <@ p_seqs) OR cardinality(p_owed_seqs) <> cardinality(p_owed) THEN
            RAISE EXCEPTION 'audit stream %: a debt must point at a record of its own batch (records %, debts at %)',
                p_stream, p_seqs, p_owed_seqs USING ERRCODE = '22023';
        END IF;
        INSERT INTO agents_audit_debts (stream, call_id, run_id, seq)
            SELECT p_stream, o.* FROM unnest(p_owed, p_owed_runs, p_owed_seqs) AS o (call_id, run_id, seq)
            WHERE (SELECT true FROM agents_audit_debts d
                WHERE d.stream = p_stream AND d.call_id = o.call_id AND d.run_id = o.run_id) IS NULL;
    END IF;
    IF cardinality(p_paid_calls) > 0 OR cardinality(p_paid) > 0 THEN
        DELETE FROM agents_audit_debts WHERE stream = p_stream AND (call_id = ANY(p_paid_calls)
            OR (call_id, run_id) IN (SELECT * FROM unnest(p_paid, p_paid_runs)));
    END IF;
END
$$;
DROP FUNCTION agents_audit_advance_fenced(TEXT, BIGINT, TEXT, BIGINT, BIGINT, TEXT);
