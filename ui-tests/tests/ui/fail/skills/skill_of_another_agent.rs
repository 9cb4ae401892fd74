// A skill of one agent given where the run's agent is another: the skill names its agent in
// its type, and the run is of that agent, so its output is not the other agent's.
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
    skills: { decide: [lookup, approve] },
}

agent! {
    /// Reads cases.
    pub struct Reader;
    output: u32,
    tools: [lookup],
    skills: { read: [lookup] },
}

async fn start(rt: &agents_runtime::Runtime, who: agents_runtime::Principal) {
    let run: agents_runtime::RunHandle<u32> = rt.start_in_skill(who, "s", DeskSkill::Decide, "hi".to_owned()).unwrap();
    let _ = run;
}

fn main() {}
