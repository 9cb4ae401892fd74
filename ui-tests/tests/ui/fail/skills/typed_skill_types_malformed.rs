// A skill's own types are written `name(Input -> Output)`: one type alone is refused with the
// form to write.
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
    skills: { review(String): [lookup] },
}

fn main() {}
