// Tools brought into scope by a glob import and granted by their bare names.
#![allow(dead_code)]

mod tools {
    use agents_runtime::tool;

    /// Reads a ticket.
    #[tool(permission = public)]
    pub async fn read_ticket(id: u64) -> Result<u64, String> {
        Ok(id)
    }

    /// Lists tickets.
    #[tool(permission = public)]
    pub async fn list_tickets() -> Result<Vec<u64>, String> {
        Ok(vec![])
    }
}

use agents_runtime::{Agent, agent};
use tools::*;

agent! {
    /// Helps.
    pub struct Helper;
    tools: [read_ticket, list_tickets],
}

fn main() {
    assert_eq!(<Helper as Agent>::tools().len(), 2);
}
