// A limit written with another type's suffix.
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
    limits: { history_messages: 40u64 },
}

fn main() {}
