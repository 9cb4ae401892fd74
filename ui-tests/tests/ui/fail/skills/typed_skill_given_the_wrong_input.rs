// A typed skill takes its own input: a run started in it with the agent's input type (or any
// other) does not compile, and the handle yields the skill's output, not the agent's.
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
    skills: { review(u32 -> bool): [lookup] },
}

async fn start(rt: &agents_runtime::Runtime, who: agents_runtime::Principal) {
    let _ = rt.start_skill::<DeskReviewSkill>(who.clone(), "s", "review case 7".to_owned());
    let _: agents_runtime::RunHandle<String> = rt.start_skill::<DeskReviewSkill>(who, "s", 7).unwrap();
}

fn main() {}
