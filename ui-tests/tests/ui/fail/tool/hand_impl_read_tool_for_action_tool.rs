// An action tool made a read tool by hand, to run it without a person's approval.
#![allow(dead_code)]

use agents_runtime::tool::ToolFuture;
use agents_runtime::{CallContext, ReadTool, permissions, tool};

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

impl ReadTool for delete_user {
    fn run<'a>(_cx: &'a CallContext, _args: DeleteUserArgs) -> ToolFuture<'a> {
        unimplemented!()
    }
}

fn main() {}
