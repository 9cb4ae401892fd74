//! Permissions and tools for agents declared in other crates. This crate depends on
//! `agents-runtime` alone: what `#[tool]`, `agent!` and `permissions!` expand to reaches serde,
//! schemars and inventory through the runtime.

use agents_runtime::{EnvAccess, Grants, ToolContext, agent, permissions, tool};

permissions! {
    /// The permissions of the squad application.
    pub mod perms {
        athlete.read,
        injury.write,
    }
}

/// Lists the athletes of the caller's organisation, optionally one squad.
#[tool(permission = perms::athlete::read, risk = low)]
pub async fn list_athletes(cx: &ToolContext<'_>, squad: Option<String>) -> Result<Vec<String>, String> {
    let squad = squad.unwrap_or_else(|| "all".to_owned());
    Ok(vec![format!("athletes of {} in {squad}", cx.principal().org_id)])
}

/// Records an injury for an athlete.
///
/// # Arguments
///
/// * `athlete_id` - the athlete id
/// * `note` - the note
#[tool(permission = perms::injury::write, mutating, title = "Record injury", risk = high)]
pub async fn create_injury(athlete_id: u64, #[secret] note: String) -> Result<String, String> {
    Ok(format!("injury for {athlete_id}: {} chars", note.len()))
}

/// Hands a password reset to the service desk.
#[tool(permission = public, handoff)]
pub fn reset_password(user: String);

/// Summarises the squad by invoking `list_athletes` through the gate.
#[tool(permission = perms::athlete::read)]
pub async fn squad_summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>, squad: String) -> Result<String, String> {
    // Built from text: this crate has no `serde_json` of its own.
    let args = format!("{{\"squad\":{squad:?}}}").parse().map_err(|e| format!("{e}"))?;
    let list = cx.invoke::<list_athletes>(args).await.map_err(|e| e.message)?;
    Ok(format!("summary: {list}"))
}

/// Tells which region the application runs in.
#[tool(permission = public, policy(env(vars = ["APP_REGION"])))]
pub fn region(env: EnvAccess) -> Result<Option<String>, String> {
    env.var("APP_REGION").map_err(|e| e.to_string())
}

agent! {
    /// Reads the squad; declared in the crate that defines its tools.
    pub struct SquadReader;
    name: "squad-reader",
    tools: [list_athletes, squad_summary, region],
    ceiling: [perms::athlete::read],
}
