// A call context made up, to hand a handler.
#![allow(dead_code)]

use agents_runtime::{CallContext, permissions, tool};

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

fn forge() -> CallContext {
    #[allow(unreachable_code)]
    CallContext { spec: &<delete_user as agents_runtime::Tool>::SPEC, ..unimplemented!() }
}

fn main() {}
