// A skill lists a tool that invokes another the skill does not offer: that call would be
// denied outside the skill, so the agent does not compile.

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

/// Summarises the squad by invoking `list_athletes`.
#[tool(permission = perms::athlete::read)]
async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>) -> Result<String, String> {
    let list = cx.invoke::<list_athletes>(serde_json::json!({})).await.map_err(|e| e.message)?;
    Ok(list.to_string())
}

agent! {
    /// Writes squad summaries.
    pub struct Coach;
    tools: [summary, list_athletes],
    skills: { brief: [summary], roster: [list_athletes] },
}

fn main() {}
