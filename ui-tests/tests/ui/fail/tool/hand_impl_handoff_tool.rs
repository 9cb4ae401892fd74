// An action tool declared a handoff by hand, so that a call becomes a record instead of a confirmation.
#![allow(dead_code)]

use agents_runtime::{HandoffTool, permissions, tool};

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

impl HandoffTool for delete_user {}

fn main() {}
