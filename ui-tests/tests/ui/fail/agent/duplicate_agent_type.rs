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
}

agent! {
    /// Answers questions about injuries.
    pub struct Clinic;
    name: "injuries",
    tools: [list_athletes],
}

fn main() {}
