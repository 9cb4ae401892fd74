// An entry built field by field, pairing one tool's spec with another tool's handler.
#![allow(dead_code)]

use agents_runtime::{Dispatch, Tool, RegisteredTool, agent, permissions, tool};

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

fn swapped() -> RegisteredTool<Helpdesk> {
    RegisteredTool {
        spec: &<read_ticket as Tool>::SPEC,
        schema: <read_ticket as Tool>::input_schema,
        parse: |_| Err(String::new()),
        handler: <delete_user as Dispatch<Helpdesk>>::handler(),
    }
}

fn main() {}
