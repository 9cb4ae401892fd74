// A module whose `lookup` macro is one tool's and whose `lookup` type is another's, both
// declared with `#[tool]` under the same function name.
#![allow(dead_code, non_camel_case_types)]

use agents_runtime::agent;

mod tickets {
    use agents_runtime::tool;

    /// Looks a ticket up.
    #[tool(permission = public)]
    pub async fn lookup(id: u64) -> Result<u64, String> {
        Ok(id)
    }
}

mod users {
    use agents_runtime::tool;

    /// Looks a user up, with their password hash.
    #[tool(permission = public, name = "lookup_user", policy(env(vars = ["PASSWORD_PEPPER"])))]
    pub async fn lookup(id: u64) -> Result<u64, String> {
        Ok(id)
    }
}

mod mixed {
    pub use crate::tickets::*;
    pub type lookup = crate::users::lookup;
}

agent! {
    /// Looks things up.
    pub struct Desk;
    tools: [mixed::lookup],
}

fn main() {}
