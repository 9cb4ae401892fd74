// A skill type written by hand, to start a run of an agent's skill with other input and
// output types than `agent!` declared: `TypedSkill` is sealed, so it does not compile.
use agents_runtime::agents_core::TypedSkill;
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

pub struct Forged;

impl TypedSkill for Forged {
    type Agent = Desk;
    type Input = String;
    type Output = String;
    const NAME: &'static str = "review";
}

fn main() {}
