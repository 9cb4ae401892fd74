// The approval of one action handed to another action tool.
#![allow(dead_code)]

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

/// Wipes a disk.
///
/// # Arguments
///
/// * `disk` - the disk
#[tool(permission = perms::user::delete, mutating, title = "Wipe disk", risk = critical)]
async fn wipe_disk(disk: String) -> Result<String, String> {
    Ok(disk)
}

fn moved<'a>(cx: &'a CallContext, approval: Approval<'a, delete_user>) {
    let _ = <wipe_disk as ActionTool>::run_approved(cx, WipeDiskArgs { disk: "/".into() }, approval);
}

fn main() {}
