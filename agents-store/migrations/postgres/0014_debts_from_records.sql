-- A stream's debts are derived from its records by whoever reads them, not kept by every
-- append. The append (one statement, its own transaction) now advances the head under its
-- fence and inserts the records, nothing else: a call proposed and settled between two reads
-- of the debts (most calls) never writes a debt row. Before reading or claiming a stream's
-- debts, a node accounts for the records after the stream's mark in `seq` order (the debts
-- they pay deleted, those they leave owed inserted where the call has none in its run) and
-- moves the mark to the last of them, in one transaction under the mark's row lock. Records
-- are stored in `seq` order under the head's lock, so the records after a mark that a
-- transaction sees are all there are up to the head it sees. Accounting a range again (a mark
-- wound back) leaves the same debts: in `seq` order each call's final record follows its
-- `proposed` record.
CREATE TABLE agents_audit_debt_marks (
    stream TEXT PRIMARY KEY,
    seq BIGINT NOT NULL CHECK (seq >= 0)
);
-- The appends of the schema before kept the debts of every record up to each stream's head.
INSERT INTO agents_audit_debt_marks (stream, seq) SELECT stream, seq FROM agents_audit_heads;

DROP FUNCTION agents_audit_append(TEXT, BIGINT, TEXT, BIGINT, BIGINT, TEXT, BIGINT[], TEXT[], TEXT[], TEXT[],
    TEXT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[]);
CREATE FUNCTION agents_audit_append(
    p_stream TEXT, p_from BIGINT, p_from_hash TEXT, p_fence BIGINT, p_to BIGINT, p_to_hash TEXT,
    p_seqs BIGINT[], p_prevs TEXT[], p_hashes TEXT[], p_lines TEXT[]
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
END
$$;
