use agents_runtime::agent;

/// Lists athletes visible to the caller, but is not a tool.
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

agent! {
    /// Answers questions about the squad.
    pub struct Clinic;
    tools: [list_athletes],
}

fn main() {}
