//! Composites: the graph manifest `composite!` derives without running anything, each agent's
//! capability summary against its manifest (merged with the agents it grants and hands off
//! to), nested composites.

use agents_runtime::agents_core::compose::{CapabilityLists, Join, MemberResult, Reach, Route, Step, Stop};
use agents_runtime::agents_core::graph::{GraphManifest, Reaches};
use agents_runtime::agents_core::manifest::Manifest;
use agents_runtime::agents_core::report::{CompositeReport, render_composite};
use agents_runtime::{Agent, agent, composite, permissions, tool};
use serde_json::{Value, json};

permissions! {
    pub mod perms { kyc.read, kyc.decide }
}

/// Reads an application.
#[tool(permission = perms::kyc::read)]
async fn read_application(id: u64) -> Result<u64, String> {
    Ok(id)
}

/// Approves an application.
///
/// # Arguments
///
/// * `id` - the application
#[tool(permission = perms::kyc::decide, mutating, title = "Approve")]
async fn approve(id: u64) -> Result<u64, String> {
    Ok(id)
}

/// Sends an application to a person.
///
/// # Arguments
///
/// * `id` - the application
#[tool(permission = perms::kyc::read, handoff, title = "Escalate")]
async fn escalate(id: u64) -> Result<u64, String>;

agent! {
    /// Reads the request.
    pub struct Intake;
    tools: [read_application],
}
agent! {
    /// Reviews the request.
    pub struct Reviewer;
    tools: [read_application, approve],
}
agent! {
    /// Sends the request to a person.
    pub struct HumanReview;
    tools: [escalate],
}
agent! {
    /// Counts words.
    pub struct Count;
    input: String,
    output: u64,
    tools: [],
}

/// Sends a request that mentions a person to the human review.
pub struct ByMention;
impl Route<String> for ByMention {
    fn route(input: &String) -> Option<&'static str> {
        input.contains("person").then_some("human-review")
    }
}

composite! {
    /// Intake, then a review or a person.
    pub struct Kyc: String -> String =
        then(Intake, branch(ByMention, [Reviewer], default = HumanReview));
}

/// Adds the counts.
pub struct Sum;
impl Join for Sum {
    type Item = u64;
    type Output = u64;
    fn join(items: Vec<MemberResult<u64>>) -> Result<u64, String> {
        items.into_iter().sum()
    }
}

/// Ends when the answer is short.
pub struct Short;
impl Stop<String> for Short {
    fn stop(output: &String) -> bool {
        output.len() < 10
    }
}

/// Trims the text.
pub struct Trim;
impl Step<String> for Trim {
    fn step(value: String) -> Result<String, String> {
        Ok(value.trim().to_owned())
    }
}

composite! {
    /// Every combinator once, with `Kyc` nested.
    pub struct Everything: String -> u64 =
        then(
            wrap(loop(Kyc, max = 3, until = Short), before = [Trim], after = [Trim]),
            forum([Intake, Reviewer], moderator = Moderator, rounds = 2),
            branch(model, [Reviewer], default = Intake),
            parallel([Count, Count], join = Sum, on_failure = collect)
        );
}

agent! {
    /// Decides among the answers.
    pub struct Moderator;
    input: Vec<String>,
    output: String,
    tools: [],
}

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn capabilities<A: Agent>() -> Value {
    let c = A::CAPABILITIES;
    json!({ "actions": c.actions, "handoffs": c.handoffs, "permissions": c.permissions, "tools": c.tools, "reaches": c.reaches.as_str() })
}

#[test]
fn an_agents_capabilities_are_its_manifests() {
    for (caps, manifest) in [
        (capabilities::<Intake>(), Intake::MANIFEST),
        (capabilities::<Reviewer>(), Reviewer::MANIFEST),
        (capabilities::<HumanReview>(), HumanReview::MANIFEST),
        (capabilities::<Count>(), Count::MANIFEST),
    ] {
        let manifest: Manifest = serde_json::from_str(manifest).unwrap();
        let lists = CapabilityLists::of(&manifest);
        let expected = json!({ "actions": lists.actions, "handoffs": lists.handoffs, "permissions": lists.permissions, "tools": lists.tools, "reaches": lists.reach().as_str() });
        assert_eq!(caps, expected);
    }
    assert_eq!(capabilities::<Reviewer>()["actions"], json!(["approve"]));
    assert_eq!(capabilities::<HumanReview>()["reaches"], "handoff");
    assert_eq!(capabilities::<Count>()["reaches"], "none");
}

#[test]
fn the_graph_manifest_names_each_node_by_its_hash_and_capabilities() {
    let m = parsed(Kyc::MANIFEST);
    assert_eq!(m["format"], "agents.composite-manifest");
    assert_eq!(
        m["composite"],
        json!({"description": "Intake, then a review or a person.", "entry": "intake", "input": "String", "name": "kyc", "output": "String"})
    );
    let ids: Vec<&str> = m["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["branch", "human-review", "intake", "reviewer"]);
    assert_eq!(m["nodes"][3]["manifest_sha256"], Reviewer::MANIFEST_SHA256);
    assert_eq!(m["nodes"][3]["agent"], "Reviewer");
    assert_eq!(m["nodes"][3]["reaches"], "action");
    assert_eq!(m["nodes"][0]["router"], "code");
    assert_eq!(
        m["edges"],
        json!([
            {"from": "branch", "kind": "default", "to": "human-review"},
            {"from": "branch", "kind": "arm", "to": "reviewer"},
            {"from": "intake", "kind": "then", "to": "branch"},
        ])
    );
    assert_eq!(
        m["capabilities"],
        json!({"actions": ["approve"], "handoffs": ["escalate"], "permissions": ["kyc.decide", "kyc.read"], "tools": ["approve", "escalate", "read_application"]})
    );
    assert_eq!(Kyc::MANIFEST_SHA256, agents_runtime::agents_core::canonical::sha256_hex(Kyc::MANIFEST.as_bytes()));
    assert_eq!(agents_runtime::agents_core::canonical::to_string(&m), Kyc::MANIFEST, "canonical JSON");
    assert_eq!(ByMention::route(&"a person, please".to_owned()), Some("human-review"));
}

#[test]
fn every_combinator_is_a_node_and_a_nested_composite_is_one_node() {
    let m = parsed(Everything::MANIFEST);
    let nodes = m["nodes"].as_array().unwrap();
    let ids: Vec<&str> = nodes.iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "branch",
            "count",
            "count-2",
            "forum",
            "intake",
            "intake-2",
            "kyc",
            "loop",
            "moderator",
            "parallel",
            "reviewer",
            "reviewer-2",
            "wrap"
        ]
    );
    let node = |id: &str| nodes.iter().find(|n| n["id"] == id).unwrap().clone();
    assert_eq!(node("kyc")["kind"], "composite");
    assert_eq!(node("kyc")["manifest_sha256"], Kyc::MANIFEST_SHA256);
    assert_eq!(node("kyc")["reaches"], "handoff");
    assert_eq!(node("loop")["max_iterations"], 3);
    assert_eq!(node("forum")["rounds"], 2);
    assert_eq!(node("branch")["router"], "model");
    assert_eq!(node("parallel")["join"], "Sum");
    assert_eq!(node("parallel")["on_failure"], "collect");
    assert_eq!(node("wrap")["steps"], json!(["Trim", "Trim"]));
    let edges = m["edges"].as_array().unwrap();
    let has = |from: &str, kind: &str, to: &str| edges.contains(&json!({"from": from, "kind": kind, "to": to}));
    assert!(has("wrap", "inner", "loop") && has("loop", "body", "kyc"));
    assert!(has("wrap", "then", "forum") && has("forum", "then", "branch") && has("branch", "then", "parallel"));
    assert!(
        has("forum", "moderator", "moderator")
            && has("forum", "member", "intake")
            && has("forum", "member", "reviewer")
    );
    assert!(has("parallel", "member", "count") && has("parallel", "member", "count-2"));
    assert_eq!(m["capabilities"]["handoffs"], json!(["escalate"]), "the nested composite's capabilities count");
    assert!(Short::stop(&"ok".to_owned()));
    assert_eq!(Trim::step(" a ".to_owned()), Ok("a".to_owned()));
    assert_eq!(Sum::join(vec![Ok(1), Ok(2)]), Ok(3));
}

// A run entering an agent may reach what the agents it grants and hands off to reach: its
// summary, its composite node and the report's colour must say so.

agent! {
    /// Reads the request and asks the reviewer, who may approve it.
    pub struct Supervisor;
    tools: [read_application],
    agents: [Reviewer],
}

/// Hands the request to the reviewer, who may approve it.
///
/// # Arguments
///
/// * `request` - the request
#[tool(permission = perms::kyc::read, handoff = Reviewer)]
fn to_reviewer(request: String);

agent! {
    /// Reads the request and hands it to the reviewer.
    pub struct Referrer;
    tools: [read_application, to_reviewer],
}

agent! {
    /// Asks the supervisor, who asks the reviewer.
    pub struct Chief;
    tools: [],
    agents: [Supervisor],
}

composite! {
    /// Intake, then the supervisor (who grants the reviewer).
    pub struct Supervised: String -> String = then(Intake, Supervisor);
}

fn own_lists<A: Agent>() -> CapabilityLists {
    CapabilityLists::of(&serde_json::from_str::<Manifest>(A::MANIFEST).unwrap())
}

#[test]
fn a_granting_agents_capabilities_cover_the_granted_agents_tools() {
    // Its own tools read only; the agent it grants approves.
    assert_eq!(own_lists::<Supervisor>().reach(), Reach::Read);
    let caps = capabilities::<Supervisor>();
    assert_eq!(caps["actions"], json!(["approve"]));
    assert_eq!(caps["tools"], json!(["approve", "read_application"]));
    assert_eq!(caps["permissions"], json!(["kyc.decide", "kyc.read"]));
    assert_eq!(caps["reaches"], "action");
    assert_eq!(Supervisor::CAPABILITIES.reaches, Reach::Action);
    // In turn: an agent that grants the supervisor reaches the reviewer's approval too.
    assert_eq!(own_lists::<Chief>(), CapabilityLists::default());
    assert_eq!(capabilities::<Chief>(), caps);
}

#[test]
fn a_handoff_tools_target_is_part_of_what_the_agent_reaches() {
    let own = own_lists::<Referrer>();
    assert_eq!(own.actions, Vec::<String>::new());
    assert_eq!(own.permissions, ["kyc.read"]);
    let caps = capabilities::<Referrer>();
    assert_eq!(caps["actions"], json!(["approve"]));
    assert_eq!(caps["handoffs"], json!(["to_reviewer"]));
    assert_eq!(caps["tools"], json!(["approve", "read_application", "to_reviewer"]));
    assert_eq!(caps["permissions"], json!(["kyc.decide", "kyc.read"]));
    assert_eq!(caps["reaches"], "handoff");
    // The summary is the own lists merged with the target's: what the runtime checks.
    assert_eq!(
        CapabilityLists::of_summary(&Referrer::CAPABILITIES),
        own.merge(&CapabilityLists::of_summary(&Reviewer::CAPABILITIES))
    );
}

#[test]
fn a_composite_node_that_grants_an_agent_names_what_the_callee_reaches() {
    let m = parsed(Supervised::MANIFEST);
    let node = m["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "supervisor").unwrap().clone();
    assert_eq!(node["tools"], json!(["approve", "read_application"]));
    assert_eq!(node["actions"], json!(["approve"]));
    assert_eq!(node["reaches"], "action");
    assert_eq!(
        m["capabilities"],
        json!({"actions": ["approve"], "handoffs": [], "permissions": ["kyc.decide", "kyc.read"], "tools": ["approve", "read_application"]})
    );
    // The graph manifest reader accepts it (lists, reaches and union consistent).
    let graph = GraphManifest::parse(Supervised::MANIFEST).unwrap();
    assert_eq!(graph.reach_from("supervisor"), Reaches::Action);
    assert_eq!(graph.capabilities.actions, ["approve"]);
}

#[test]
fn the_report_colours_a_granting_node_by_the_callees_tier() {
    let graph = GraphManifest::parse(Supervised::MANIFEST).unwrap();
    let html = render_composite(&CompositeReport::new(&graph, "supervised.json", Supervised::MANIFEST_SHA256));
    let node = |id: &str| {
        let at = html.find(&format!(r#"data-node="{id}""#)).unwrap_or_else(|| panic!("no node {id}"));
        html[..at].rsplit("<g ").next().unwrap().to_owned() + &html[at..at + 400]
    };
    let action_fill = "#fef3c7";
    assert!(node("supervisor").contains("reaches-action") && node("supervisor").contains(action_fill), "{html}");
    assert!(node("intake").contains("reaches-action"), "intake runs on into the supervisor");
}
