// Permissions, tools and the agent each live in their own module and name each other by path.

mod auth {
    agents_runtime::permissions! {
        pub mod perms {
            athlete.read,
            injury.write,
        }
    }
}

mod tools {
    pub mod athletes {
        use crate::auth::perms;
        use agents_runtime::tool;

        /// Lists athletes visible to the caller.
        #[tool(permission = perms::athlete::read)]
        pub async fn list_athletes() -> Result<Vec<String>, String> {
            Ok(vec![])
        }
    }

    pub mod injuries {
        use agents_runtime::tool;

        /// Records an injury.
        ///
        /// # Arguments
        ///
        /// * `athlete_id` - the athlete id
        #[tool(permission = crate::auth::perms::injury::write, mutating, title = "Record injury")]
        pub async fn create_injury(athlete_id: u64) -> Result<u64, String> {
            Ok(athlete_id)
        }
    }

    pub use injuries::create_injury;
}

mod agents {
    use agents_runtime::agent;

    agent! {
        /// Helps clinicians.
        pub struct Clinic;
        tools: [crate::tools::athletes::list_athletes, super::tools::create_injury],
        skills: { intake: [super::tools::create_injury] },
        ceiling: [crate::auth::perms::athlete::read, crate::auth::perms::injury::write],
    }
}

use agents_runtime::{Agent, Registry};

fn main() {
    let names: Vec<&str> = <agents::Clinic as Agent>::tools().iter().map(|t| t.name).collect();
    assert_eq!(names, ["create_injury", "list_athletes"]);
    assert!(<agents::Clinic as Registry>::entry("create_injury").is_some());
    assert_eq!(<agents::Clinic as Agent>::SPEC.skills[0].tools, ["create_injury"]);
}
