// `start_skill` takes a skill's own type, which `agent!` writes: the skill enum (or any other
// type) is refused with the name of the type to use.
use agents_runtime::{agent, permissions, tool};

permissions! {
    pub mod perms {
        case.read,
    }
}

/// Looks a case up.
#[tool(permission = perms::case::read)]
async fn lookup() -> Result<String, String> {
    Ok(String::new())
}

agent! {
    /// Reviews cases.
    pub struct Desk;
    tools: [lookup],
    skills: { review: [lookup] },
}

async fn start(rt: &agents_runtime::Runtime, who: agents_runtime::Principal) {
    let _ = rt.start_skill::<DeskSkill>(who, "s", "review case 7".to_owned());
}

fn main() {}
