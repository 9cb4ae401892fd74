// A handler of one's own for a tool, for an agent the tool's own Dispatch impl does not cover.
#![allow(dead_code)]

use agents_runtime::{Dispatch, Grants, ToolContext, agent, permissions, tool};

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

/// Summarises a ticket through `read_ticket`.
#[tool(permission = perms::ticket::read)]
async fn summary<A: Grants<read_ticket>>(cx: &ToolContext<'_, A>) -> Result<String, String> {
    let _ = cx;
    Ok(String::new())
}

agent! {
    /// Deletes users.
    pub struct Admin;
    tools: [delete_user],
}

impl Dispatch<Admin> for summary {
    fn handler() -> agents_runtime::tool::Handler<Admin> {
        match <delete_user as Dispatch<Admin>>::handler() {
            agents_runtime::tool::Handler::Action(f) => agents_runtime::tool::Handler::Read(f),
            other => other,
        }
    }
}

fn main() {}
