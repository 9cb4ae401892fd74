// A read tool made an action tool by hand, so that another approval could run it.
#![allow(dead_code)]

use agents_runtime::tool::ToolFuture;
use agents_runtime::{ActionTool, Approval, CallContext, permissions, tool};

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

impl ActionTool for read_ticket {
    fn run_approved<'a>(_cx: &'a CallContext, _args: ReadTicketArgs, _approval: Approval<'a, Self>) -> ToolFuture<'a> {
        unimplemented!()
    }
}

fn main() {}
