use agents_runtime::{agent, tool};

mod athletes {
    use super::*;

    /// Finds an athlete by name.
    #[tool(permission = public)]
    pub async fn lookup(name: String) -> Result<String, String> {
        Ok(name)
    }
}

mod injuries {
    use super::*;

    /// Finds an injury by id.
    #[tool(permission = public, name = "find_injury")]
    pub async fn lookup(id: u64) -> Result<u64, String> {
        Ok(id)
    }
}

agent! {
    /// Answers questions about the squad.
    pub struct Clinic;
    tools: [athletes::lookup, injuries::lookup],
    skills: { search: [lookup] },
}

fn main() {}
