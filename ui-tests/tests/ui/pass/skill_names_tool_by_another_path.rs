// A skill may name a granted tool by another path than `tools` does.

mod tools {
    use agents_runtime::tool;

    /// Lists athletes visible to the caller.
    #[tool(permission = public)]
    pub async fn list_athletes() -> Result<Vec<String>, String> {
        Ok(vec![])
    }

    /// Records an injury.
    ///
    /// # Arguments
    ///
    /// * `athlete_id` - the athlete id
    #[tool(permission = public, mutating, title = "Record injury", name = "record_injury")]
    pub async fn create_injury(athlete_id: u64) -> Result<u64, String> {
        Ok(athlete_id)
    }
}

use agents_runtime::{Agent, agent};
use tools::create_injury;

agent! {
    /// Helps clinicians.
    pub struct Clinic;
    tools: [tools::list_athletes, crate::tools::create_injury],
    skills: { intake: [create_injury, self::tools::list_athletes] },
}

fn main() {
    assert_eq!(Clinic::SPEC.skills[0].tools, ["list_athletes", "record_injury"]);
    assert!(<Clinic as Agent>::tool_spec("record_injury").is_some());
}
