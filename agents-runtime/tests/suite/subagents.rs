//! Agents granted to an agent (`agents: [...]`), at compile time: the granting agent's
//! manifest names each granted agent by its name and manifest SHA-256 (so a change inside a
//! granted agent changes the granting agent's hash), the registry check rebuilds those bytes,
//! and `FitsCeilingOf` holds through a chain of grants (what does not fit does not compile:
//! `ui-tests/tests/ui/fail/subagents/`).

use agents_runtime::agents_core::manifest::Manifest;
use agents_runtime::{Agent, FitsCeilingOf, agent, permissions, tool};

permissions! {
    pub mod perms {
        kyc.read,
        kyc.decide,
    }
}

mod tools {
    use super::perms;
    use agents_runtime::tool;

    /// Reads a customer's file.
    #[tool(permission = perms::kyc::read)]
    pub async fn read_file(customer: u64) -> Result<String, String> {
        Ok(format!("file {customer}"))
    }

    /// Records a KYC decision.
    ///
    /// # Arguments
    ///
    /// * `customer` - the customer
    #[tool(permission = perms::kyc::decide, mutating, title = "Record decision")]
    pub async fn record_decision(customer: u64) -> Result<u64, String> {
        Ok(customer)
    }
}

/// Checks the sanctions list (public).
#[tool(permission = public)]
async fn sanctions(name: String) -> Result<bool, String> {
    Ok(name.is_empty())
}

pub mod reviewers {
    use super::perms;
    use super::tools::{read_file, record_decision};
    use agents_runtime::agent;

    agent! {
        /// Reviews a file a second time and records the decision.
        pub struct SecondReviewer;
        name: "second-reviewer",
        tools: [read_file, record_decision],
        ceiling: [perms::kyc::read, perms::kyc::decide],
    }
}

agent! {
    /// Reviews a case and asks a second reviewer.
    pub struct Reviewer;
    tools: [sanctions],
    agents: [reviewers::SecondReviewer],
}

agent! {
    /// Supervises reviews, through a reviewer who asks a second one.
    pub struct Supervisor;
    tools: [tools::read_file],
    ceiling: [perms::kyc::read, perms::kyc::decide],
    agents: [Reviewer],
}

agent! {
    /// Does not grant agents.
    pub struct Alone;
    tools: [sanctions],
}

/// Compiles only when `S` fits within the ceiling of `C`.
fn fits<S: FitsCeilingOf<C>, C>() {}

#[test]
fn the_manifest_names_each_granted_agent_by_its_hash() {
    let entry =
        format!(r#""agents":[{{"name":"second-reviewer","sha256":"{}"}}]"#, reviewers::SecondReviewer::MANIFEST_SHA256);
    assert!(Reviewer::MANIFEST.contains(&entry), "{}", Reviewer::MANIFEST);
    let entry = format!(r#""agents":[{{"name":"Reviewer","sha256":"{}"}}]"#, Reviewer::MANIFEST_SHA256);
    assert!(Supervisor::MANIFEST.contains(&entry), "{}", Supervisor::MANIFEST);
    assert!(!Alone::MANIFEST.contains("\"agents\""), "{}", Alone::MANIFEST);
    assert_eq!(Reviewer::AGENTS.len(), 1);
    assert_eq!(Reviewer::AGENTS[0].sha256, reviewers::SecondReviewer::MANIFEST_SHA256);
}

#[test]
fn the_registry_check_rebuilds_the_manifest_with_its_granted_agents() {
    for (spec, agents, tools, text) in [
        (&Reviewer::SPEC, Reviewer::AGENTS, Reviewer::tools(), Reviewer::MANIFEST),
        (&Supervisor::SPEC, Supervisor::AGENTS, Supervisor::tools(), Supervisor::MANIFEST),
    ] {
        let rebuilt = Manifest::from_specs_granting(spec, agents, tools).unwrap();
        assert_eq!(rebuilt.to_canonical_string(), text);
        // Without its granted agents, the manifest is another one: the runtime would refuse it.
        assert_ne!(Manifest::from_specs(spec, tools).unwrap().to_canonical_string(), text);
    }
    agents_runtime::tool::verify_registry::<Supervisor>().unwrap();
    agents_runtime::tool::verify_registry::<Reviewer>().unwrap();
}

#[test]
fn a_granted_agent_fits_through_the_agents_it_grants_in_turn() {
    // `Reviewer` reaches `kyc.decide` through `SecondReviewer`: it fits `Supervisor`, whose
    // ceiling lists it, and any agent without a ceiling.
    fits::<Reviewer, Supervisor>();
    fits::<reviewers::SecondReviewer, Supervisor>();
    fits::<Reviewer, Alone>();
}
