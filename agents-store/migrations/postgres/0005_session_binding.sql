-- Sessions bound to the whole principal (the role their context was built under), the
-- conversational proposal waiting for the user's next message, and a revision that every save
-- must match (optimistic concurrency between nodes). Sessions stored before this version have
-- no role: their next run starts a fresh context.
ALTER TABLE agents_sessions ADD COLUMN role TEXT NOT NULL DEFAULT '';
ALTER TABLE agents_sessions ADD COLUMN pending JSONB NOT NULL DEFAULT 'null'::jsonb;
ALTER TABLE agents_sessions ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
