-- Times are milliseconds since the Unix epoch on this host's clock.
CREATE TABLE agents_tokens (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    args_mac TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    redeemed_at INTEGER
) STRICT;
CREATE INDEX agents_tokens_session ON agents_tokens (session_id);

CREATE TABLE agents_run_slots (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    lease_until INTEGER NOT NULL
) STRICT;
CREATE INDEX agents_run_slots_owner ON agents_run_slots (org_id, user_id);

CREATE TABLE agents_proposals (
    call_id TEXT PRIMARY KEY,
    ord INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    title TEXT NOT NULL,
    args TEXT NOT NULL,
    args_mac TEXT NOT NULL,
    verdict TEXT CHECK (verdict IN ('approved', 'rejected')),
    reason TEXT,
    claimed_by TEXT,
    CHECK (claimed_by IS NULL OR verdict = 'approved')
) STRICT;
CREATE INDEX agents_proposals_pending ON agents_proposals (org_id, user_id, ord) WHERE verdict IS NULL;

CREATE TABLE agents_sessions (
    session_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    history TEXT NOT NULL,
    digest TEXT NOT NULL,
    used_at INTEGER NOT NULL
) STRICT;
CREATE INDEX agents_sessions_used ON agents_sessions (used_at);

CREATE TABLE agents_audit_heads (
    stream TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
) STRICT;
CREATE TABLE agents_audit (
    stream TEXT NOT NULL,
    seq INTEGER NOT NULL CHECK (seq >= 1),
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (stream, seq)
) STRICT;
CREATE TRIGGER agents_audit_no_update BEFORE UPDATE ON agents_audit
BEGIN
    SELECT RAISE(ABORT, 'agents_audit is append-only: UPDATE is refused');
END;
CREATE TRIGGER agents_audit_no_delete BEFORE DELETE ON agents_audit
BEGIN
    SELECT RAISE(ABORT, 'agents_audit is append-only: DELETE is refused');
END;
