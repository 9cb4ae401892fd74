// A limit of zero.
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
    limits: { token_ttl_secs: 0 },
}

fn main() {}
