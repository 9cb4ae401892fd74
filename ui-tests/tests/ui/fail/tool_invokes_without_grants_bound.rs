use agents_runtime::{Agent, ToolContext, permissions, tool};

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

/// Summarises the caller's squad, but does not declare that it invokes `list_athletes`.
#[tool(permission = perms::athlete::read)]
async fn summary<A: Agent>(cx: &ToolContext<'_, A>) -> Result<String, String> {
    let list = cx.invoke::<list_athletes>(serde_json::json!({})).await.map_err(|e| e.message)?;
    Ok(list.to_string())
}

fn main() {}
