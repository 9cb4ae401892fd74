use agents_runtime::{Grants, ToolContext, tool};

/// Lists athletes visible to the caller.
#[tool(permission = public)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

/// Summarises the squad through `list_athletes`.
#[tool(permission = public)]
async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_>) -> Result<String, String> {
    Ok(cx.run_id().to_owned())
}

fn main() {}
