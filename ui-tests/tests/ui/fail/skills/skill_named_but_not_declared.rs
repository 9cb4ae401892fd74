// The application names a skill the agent does not declare: the skill enum has no such
// variant, so the run cannot be started in it.
use agents_runtime::{agent, permissions, tool};

permissions! {
    pub mod perms {
        case.read,
        case.write,
    }
}

/// Looks a case up.
#[tool(permission = perms::case::read)]
async fn lookup() -> Result<String, String> {
    Ok(String::new())
}

/// Approves a case.
#[tool(permission = perms::case::write, mutating, title = "Approve case")]
async fn approve() -> Result<String, String> {
    Ok(String::new())
}

agent! {
    /// Reviews cases.
    pub struct Desk;
    tools: [lookup, approve],
    skills: { triage: [lookup], decide: [lookup, approve] },
}

async fn start(rt: &agents_runtime::Runtime, who: agents_runtime::Principal) {
    let _ = rt.start_in_skill(who, "s", DeskSkill::Admin, "approve case 7".to_owned());
}

fn main() {}
