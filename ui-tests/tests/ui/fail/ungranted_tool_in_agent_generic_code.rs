use agents_runtime::{Agent, Grants, Tool, agent, permissions, tool};

permissions! {
    pub mod perms {
        ticket.read,
        user.delete,
    }
}

/// Reads a ticket.
#[tool(permission = perms::ticket::read)]
async fn read_ticket(id: u64) -> Result<String, String> {
    Ok(format!("ticket {id}"))
}

/// Deletes a user account.
///
/// # Arguments
///
/// * `id` - the id
#[tool(permission = perms::user::delete, mutating, title = "Delete user")]
async fn delete_user(id: u64) -> Result<(), String> {
    let _ = id;
    Ok(())
}

agent! {
    /// Answers questions about tickets.
    pub struct Helpdesk;
    tools: [read_ticket],
}

/// Agent-generic code: compiles only for agents that grant `T`.
fn offer<A: Agent + Grants<T>, T: Tool>() -> &'static str {
    T::NAME
}

fn main() {
    offer::<Helpdesk, read_ticket>();
    offer::<Helpdesk, delete_user>();
}
