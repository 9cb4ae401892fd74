// Two agents may share a type name in different modules of one file (and a tool may share a
// name with an associated function of a type): neither is taken for a mistake.

use agents_runtime::{Agent, agent, tool};

/// Lists athletes visible to the caller.
#[tool(permission = public)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

pub struct Store;

impl Store {
    /// An associated function of the same name as the tool, not a tool.
    pub fn list_athletes() -> Vec<String> {
        vec![]
    }
}

mod squad {
    use super::*;

    agent! {
        /// Answers questions about the squad.
        pub struct Clinic;
        name: "squad",
        tools: [list_athletes],
    }
}

mod injuries {
    use super::*;

    agent! {
        /// Answers questions about injuries.
        pub struct Clinic;
        name: "injuries",
        tools: [list_athletes],
    }
}

fn main() {
    assert_eq!(<squad::Clinic as Agent>::SPEC.name, "squad");
    assert_eq!(<injuries::Clinic as Agent>::SPEC.name, "injuries");
    assert!(Store::list_athletes().is_empty());
}
