use agents_runtime::{ToolContext, ToolError, agent, permissions, tool};

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

// Application code holding the helpdesk's context reaches for a tool the agent does not grant.
async fn escalate(cx: &ToolContext<'_, Helpdesk>) -> Result<serde_json::Value, ToolError> {
    cx.invoke::<delete_user>(serde_json::json!({ "id": 7 })).await
}

fn main() {}
