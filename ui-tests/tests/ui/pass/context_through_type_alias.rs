//! The context is the context under any name: a type alias or a renamed import. The compiler,
//! not the spelling, decides what the runtime gives the parameter.
use agents_runtime::{Grants, ToolContext as Ctx, agent, tool};

type Cx<'a> = agents_runtime::ToolContext<'a>;
type AgentCx<'a, A> = agents_runtime::ToolContext<'a, A>;

/// Tells which run asked.
#[tool(permission = public)]
async fn whoami(cx: &Cx<'_>) -> Result<String, String> {
    Ok(cx.run_id().to_owned())
}

/// Tells which call this is, and echoes a note.
#[tool(permission = public)]
fn which_call(cx: &Ctx<'_>, note: String) -> Result<String, String> {
    Ok(format!("{} {note}", cx.call_id()))
}

/// Asks the other tool.
#[tool(permission = public)]
async fn ask<A: Grants<whoami>>(cx: &AgentCx<'_, A>) -> Result<serde_json::Value, String> {
    cx.invoke::<whoami>(serde_json::json!({})).await.map_err(|e| e.message)
}

agent! {
    /// Asks.
    pub struct Asker;
    tools: [whoami, which_call, ask],
}

fn main() {
    // The context is not an argument the model sends: only `note` is.
    assert_eq!(<which_call as agents_runtime::Tool>::SPEC.params.len(), 1);
    assert!(<whoami as agents_runtime::Tool>::SPEC.params.is_empty());
}
