// An entry for a tool the agent does not grant.
#![allow(dead_code)]

use agents_runtime::{RegisteredTool, agent, permissions, tool};

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

fn ungranted() -> RegisteredTool<Helpdesk> {
    RegisteredTool::of::<delete_user>()
}

fn main() {}
