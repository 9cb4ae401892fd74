-- The final records an audit stream owes: a call's `proposed` record opens a debt, its final
-- record (executed, failed, rejected, skipped, denied) pays it, each in the transaction that
-- appends the record, so the debt is exactly as durable as the record. A debt left unpaid (the
-- final record's write failed, the process died) is claimed by one resumption (`held_by`,
-- `held_at`, milliseconds since the Unix epoch), which writes the final record. Records
-- appended before this migration open no debt. A debt is keyed by the call and its run: a read
-- call's id is the model provider's, which runs reuse; an action's is minted by the runtime,
-- and its final record (which a later turn of the session may write) pays it by the call id
-- alone.
CREATE TABLE agents_audit_debts (
    stream TEXT NOT NULL,
    call_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    line TEXT NOT NULL,
    owed_since INTEGER NOT NULL,
    held_by TEXT,
    held_at INTEGER,
    PRIMARY KEY (stream, call_id, run_id)
) STRICT;
CREATE INDEX agents_audit_debts_since ON agents_audit_debts (stream, owed_since);
