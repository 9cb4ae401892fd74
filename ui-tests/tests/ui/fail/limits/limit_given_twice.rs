// A limit given twice: the second would silently win.
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
    limits: { max_iterations: 4, max_iterations: 400 },
}

fn main() {}
