// A limit past even u64.
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
    limits: { provider_timeout_secs: 18446744073709551616 },
}

fn main() {}
