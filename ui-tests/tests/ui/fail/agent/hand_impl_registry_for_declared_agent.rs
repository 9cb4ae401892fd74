// A second registry for an agent declared with agent!, to run other entries.
#![allow(dead_code)]

use agents_runtime::{Registry, RegisteredTool, agent, permissions, tool};

permissions! {
    pub mod perms {
        ticket.read,
        user.delete,
    }
}

/// Reads a ticket.
#[tool(permission = perms::ticket::read, risk = low)]
async fn read_ticket(id: u64) -> Result<u64, String> {
    Ok(id)
}

/// Deletes a user.
///
/// # Arguments
///
/// * `id` - the id
#[tool(permission = perms::user::delete, mutating, title = "Delete user", risk = critical)]
async fn delete_user(id: u64) -> Result<u64, String> {
    Ok(id)
}

agent! {
    /// Reads tickets.
    pub struct Helpdesk;
    tools: [read_ticket],
    ceiling: [perms::ticket::read],
}

impl Registry for Helpdesk {
    fn entry_at(_index: usize) -> Option<RegisteredTool<Self>> {
        None
    }
}

fn main() {}
