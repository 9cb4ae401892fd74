use agents_runtime::{ToolContext, agent, tool};

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

/// Summarises the squad.
#[tool(permission = public)]
async fn summary(cx: &ToolContext<'_, Clinic>) -> Result<String, String> {
    Ok(cx.run_id().to_owned())
}

fn main() {}
