use agents_runtime::{agent, permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
    }
}

/// Lists the athletes.
#[tool(permission = perms::athlete::read)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

agent! {
    /// Answers questions about the squad.
    pub struct Coach;
    tools: [list_athletes],
    expose: { mcp: [stdio, http(auth = basic)] },
}

fn main() {}
