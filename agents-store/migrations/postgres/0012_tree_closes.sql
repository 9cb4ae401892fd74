-- The run trees whose root run was closed by a resumption (its `run_finished` record): one row
-- per tree, inserted by the one node that claims the closing. Two nodes settling a tree's last
-- two proposals at once both try; the primary key lets exactly one of them in.
CREATE TABLE agents_tree_closes (
    tree_run_id TEXT PRIMARY KEY,
    closed_by TEXT NOT NULL,
    closed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
