// `unskilled` is `none` or `shared`: nothing else.
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
    skills: { triage: [lookup] },
    unskilled: everyone,
}

fn main() {}
