use agents_runtime::{agent, tool};

/// Lists athletes visible to the caller.
#[tool(permission = public)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

agent! {
    /// Answers questions about the squad.
    pub struct Clinic;
    tools: [list_athletes],
    limit: { max_iterations: 4 },
}

fn main() {}
