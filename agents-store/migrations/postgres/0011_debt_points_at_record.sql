-- A debt points at its `proposed` record (`seq`, in the debt's own stream) instead of
-- repeating its line: the record is already stored, in the same transaction, so writing its
-- line a second time only doubled the append's WAL. Readers read the line through the
-- pointer. Existing debts keep their place: each points at the record whose line it held (a
-- debt whose line matches no record of its stream is a broken store; the migration refuses
-- it, naming the debt, and changes nothing).
ALTER TABLE agents_audit_debts ADD COLUMN seq BIGINT;
UPDATE agents_audit_debts d SET seq = a.seq FROM agents_audit a
    WHERE a.stream = d.stream AND a.seq = (d.line::jsonb ->> 'seq')::BIGINT AND a.line = d.line;
DO $$
DECLARE
    lost RECORD;
BEGIN
    SELECT stream, call_id, run_id INTO lost FROM agents_audit_debts WHERE seq IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the audit debt of call % (run %) in stream % holds a line that matches no stored record; restore the record or delete the debt, then migrate again',
            lost.call_id, lost.run_id, lost.stream;
    END IF;
END
$$;
ALTER TABLE agents_audit_debts ALTER COLUMN seq SET NOT NULL, DROP COLUMN line;

-- The append of migration 10, with the debts' pointers instead of their lines. A debt is
-- inserted without `ON CONFLICT`: a stream's debts are only opened here, after the head's row
-- lock is taken, so appends to one stream are serialised and a call already owed in its run
-- (its first `proposed` record keeps the debt) is seen by a plain look-up of its key: a
-- scalar subquery, one probe of the key's index a row, which the planner cannot turn into an
-- anti-join over every stream's debts as it may a `NOT EXISTS`. A debt must
-- point at a record of its own batch: anything else is refused and nothing is stored.
DROP FUNCTION agents_audit_append(
    TEXT, BIGINT, TEXT, BIGINT, BIGINT, TEXT, BIGINT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[]
);
CREATE FUNCTION agents_audit_append(
    p_stream TEXT, p_from BIGINT, p_from_hash TEXT, p_fence BIGINT, p_to BIGINT, p_to_hash TEXT,
    p_seqs BIGINT[], p_prevs TEXT[], p_hashes TEXT[], p_lines TEXT[],
    p_owed TEXT[], p_owed_runs TEXT[], p_owed_seqs BIGINT[],
    p_paid_calls TEXT[], p_paid TEXT[], p_paid_runs TEXT[]
)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- First, so a second writer waits here for the lock, never on a record's key.
    PERFORM agents_audit_advance_fenced(p_stream, p_from, p_from_hash, p_fence, p_to, p_to_hash);
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
