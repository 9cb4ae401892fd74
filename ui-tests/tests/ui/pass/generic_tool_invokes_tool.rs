// A tool generic over the agent invokes other tools through the gate; each agent carrying it
// must grant them.

use agents_runtime::{Agent, Grants, Registry, ToolContext, agent, permissions, tool};

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

/// Lists open injuries.
#[tool(permission = perms::athlete::read, name = "open_injuries")]
async fn list_injuries() -> Result<Vec<String>, String> {
    Ok(vec![])
}

/// Summarises the squad by invoking `list_athletes`.
#[tool(permission = perms::athlete::read)]
async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>) -> Result<String, String> {
    let list = cx.invoke::<list_athletes>(serde_json::json!({})).await.map_err(|e| e.message)?;
    Ok(list.to_string())
}

/// Reports on the squad by invoking two tools, bounds in a `where` clause.
#[tool(permission = perms::athlete::read)]
async fn report<Ag>(cx: &ToolContext<'_, Ag>, verbose: bool) -> Result<String, String>
where
    Ag: Grants<list_athletes> + Grants<list_injuries>,
{
    let a = cx.invoke::<list_athletes>(serde_json::json!({})).await.map_err(|e| e.message)?;
    let i = cx.invoke::<list_injuries>(serde_json::json!({})).await.map_err(|e| e.message)?;
    Ok(if verbose { format!("{a} {i}") } else { String::new() })
}

agent! {
    /// Writes squad summaries.
    pub struct Coach;
    tools: [summary, list_athletes],
}

agent! {
    /// Writes squad reports.
    pub struct Physio;
    tools: [report, summary, list_athletes, list_injuries],
}

fn main() {
    assert!(<Coach as Registry>::entry("summary").is_some());
    assert_eq!(<Coach as Agent>::tool_spec("summary").unwrap().uses, ["list_athletes"]);
    // `uses` lists tool names, also for a tool whose name differs from its function's.
    assert_eq!(<Physio as Agent>::tool_spec("report").unwrap().uses, ["list_athletes", "open_injuries"]);
    assert!(Physio::MANIFEST.contains(r#""uses":["list_athletes","open_injuries"]"#), "{}", Physio::MANIFEST);
    for (spec, manifest) in [(&Coach::SPEC, Coach::MANIFEST), (&Physio::SPEC, Physio::MANIFEST)] {
        let tools = if spec.name == "Coach" { Coach::tools() } else { Physio::tools() };
        let from_specs = agents_runtime::agents_core::manifest::Manifest::from_specs(spec, tools).unwrap();
        assert_eq!(from_specs.to_canonical_string(), manifest);
    }
}
