//! The macros end to end: tools, an agent, the manifest.

use agents_runtime::{Agent, Grants, ReadTool, Registry, ToolContext, agent, permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
        injury.write,
    }
}

#[derive(Debug)]
struct AppError(String);
impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

mod tools {
    use super::*;

    /// Lists athletes visible to the caller.
    #[tool(permission = perms::athlete::read, risk = low)]
    pub async fn list_athletes(
        cx: &ToolContext<'_>,
        squad: Option<String>,
        name: &str,
    ) -> Result<Vec<String>, AppError> {
        Ok(vec![format!("{}:{:?}:{name}", cx.principal().user_id, squad)])
    }

    /// Records an injury.
    ///
    /// # Arguments
    ///
    /// * `athlete_id` - the athlete id
    /// * `note` - the note
    #[tool(permission = perms::injury::write, mutating, title = "Record injury", risk = medium)]
    pub async fn create_injury(athlete_id: u64, #[secret] note: String) -> Result<u64, AppError> {
        let _ = note;
        Ok(athlete_id)
    }

    /// Resets a password: a person at the service desk does this.
    #[tool(permission = public, handoff)]
    pub fn reset_password(user: String);

    /// Summarises an athlete by invoking the list tool through the gate.
    #[tool(permission = perms::athlete::read)]
    pub async fn summary<A: Grants<list_athletes> + agents_runtime::Agent>(
        cx: &ToolContext<'_, A>,
        id: u64,
    ) -> Result<String, AppError> {
        let _ = cx;
        Ok(format!("{id}"))
    }
}

use tools::{create_injury, list_athletes, reset_password, summary};

agent! {
    /// Helps clinicians.
    pub struct Clinic;
    name: "clinic",
    tools: [list_athletes, create_injury, reset_password, summary],
    skills: { intake: [create_injury, list_athletes] },
    ceiling: [perms::athlete::read, perms::injury::write],
    limits: { max_iterations: 8 },
}

agent! {
    /// Helps clinicians.
    pub struct ClinicReordered;
    name: "clinic",
    limits: { max_iterations: 8 },
    ceiling: [perms::injury::write, perms::athlete::read],
    skills: { intake: [list_athletes, create_injury] },
    tools: [summary, reset_password, create_injury, list_athletes],
}

#[test]
fn manifest_is_canonical_and_hashed() {
    let m = Clinic::MANIFEST;
    assert!(m.starts_with("{\"agent\":{"), "{m}");
    assert_eq!(agents_runtime::agents_core::canonical::sha256_hex(m.as_bytes()), Clinic::MANIFEST_SHA256);
    assert_eq!(Clinic::MANIFEST, ClinicReordered::MANIFEST);
    let parsed = agents_runtime::agents_core::manifest::Manifest::parse(m).unwrap();
    assert_eq!(parsed.to_canonical_string(), m);
    let runtime = agents_runtime::agents_core::manifest::Manifest::from_specs(&Clinic::SPEC, Clinic::tools()).unwrap();
    assert_eq!(runtime.to_canonical_string(), m);
    println!("{m}");
}

#[test]
fn registry_dispatches_by_name() {
    assert!(Clinic::entry("list_athletes").is_some());
    assert!(Clinic::entry("nope").is_none());
    assert_eq!(<Clinic as Agent>::tool_spec("create_injury").unwrap().title, Some("Record injury"));
    let _ = <list_athletes as ReadTool>::run;
}

#[test]
fn a_binary_lists_every_tool_it_links() {
    let names: Vec<&str> = agents_runtime::linked_tools().iter().map(|t| t.name).collect();
    for t in ["create_injury", "list_athletes", "reset_password", "summary"] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
}
