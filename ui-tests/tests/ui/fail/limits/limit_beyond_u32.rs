// A limit one past its type's range: it was cut to 0, refusing every run.
#![allow(dead_code)]

use agents_runtime::{agent, tool};

/// Reads a ticket.
#[tool(permission = public)]
async fn read_ticket(id: u64) -> Result<u64, String> {
    Ok(id)
}

agent! {
    /// Reads tickets.
    pub struct Helpdesk;
    tools: [read_ticket],
    limits: { max_concurrent_runs: 4294967296 },
}

fn main() {}
