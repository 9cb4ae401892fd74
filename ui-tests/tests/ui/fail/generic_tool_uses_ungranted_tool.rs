use agents_runtime::{Grants, ToolContext, agent, permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
    }
}

/// Lists athletes visible to the caller.
#[tool(permission = perms::athlete::read)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

/// Summarises the caller's squad by invoking `list_athletes` through the gate.
#[tool(permission = perms::athlete::read)]
async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>) -> Result<String, String> {
    let list = cx.invoke::<list_athletes>(serde_json::json!({})).await.map_err(|e| e.message)?;
    Ok(list.to_string())
}

agent! {
    /// Writes squad summaries.
    pub struct Coach;
    tools: [summary],
}

fn main() {}
