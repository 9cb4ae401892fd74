use agents_runtime::{ToolContext, permissions, tool};

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

/// Summarises the caller's squad; its context is not generic over the agent.
#[tool(permission = perms::athlete::read)]
async fn summary(cx: &ToolContext<'_>) -> Result<String, String> {
    let list = cx.invoke::<list_athletes>(serde_json::json!({})).await.map_err(|e| e.message)?;
    Ok(list.to_string())
}

fn main() {}
