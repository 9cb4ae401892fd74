// Identical tools in two modules of one crate, each granted by its own agent.

mod athletes {
    use agents_runtime::tool;

    /// Finds a record by name.
    #[tool(permission = public)]
    pub async fn lookup(name: String) -> Result<String, String> {
        Ok(name)
    }
}

mod injuries {
    use agents_runtime::tool;

    /// Finds a record by name.
    #[tool(permission = public)]
    pub async fn lookup(name: String) -> Result<String, String> {
        Ok(name)
    }
}

use agents_runtime::{Agent, agent};

agent! {
    /// Finds athletes.
    pub struct Athletes;
    tools: [athletes::lookup],
}

agent! {
    /// Finds injuries.
    pub struct Injuries;
    tools: [injuries::lookup],
}

fn main() {
    assert_eq!(Athletes::MANIFEST.replace("Athletes", "Injuries").replace("athletes", "injuries"), Injuries::MANIFEST);
    assert!(<Athletes as Agent>::tool_spec("lookup").is_some());
}
