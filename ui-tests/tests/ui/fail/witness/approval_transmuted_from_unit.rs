// An approval forged by transmuting nothing (the witness is not zero-sized).
#![allow(dead_code)]

use agents_runtime::{Approval, permissions, tool};

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

fn forge() -> Approval<'static, delete_user> {
    unsafe { std::mem::transmute::<(), Approval<'static, delete_user>>(()) }
}

fn main() {}
