//! An agent declared over tools from another crate (`ui-tools-lib`) and one of its own, with
//! the runtime renamed to `agents` in this crate's manifest.

use ui_tools_lib::{create_injury, perms, reset_password, squad_summary};

/// Tells the caller who they are.
#[agents::tool(permission = perms::athlete::read, risk = low)]
pub async fn whoami(cx: &agents::ToolContext<'_>) -> Result<String, String> {
    Ok(format!("{} of {}", cx.principal().user_id, cx.principal().org_id))
}

agents::agent! {
    /// Helps clinicians with the squad.
    pub struct Clinic;
    name: "clinic",
    tools: [ui_tools_lib::list_athletes, create_injury, reset_password, squad_summary, whoami],
    skills: {
        intake: [create_injury, ui_tools_lib::list_athletes],
        review: [squad_summary, ui_tools_lib::list_athletes, whoami],
    },
    ceiling: [perms::athlete::read, perms::injury::write],
    limits: { max_iterations: 6 },
}
