// The approval of an action tool's witness type, without the tool: a witness is always of one tool.
#![allow(dead_code)]

use agents_runtime::{ActionTool, CallContext, permissions, tool};

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

fn run(cx: &CallContext, approval: agents_runtime::Approval<'_>) {
    let _ = <delete_user as ActionTool>::run_approved(cx, DeleteUserArgs { id: 1 }, approval);
}

fn main() {}
