//! The classification of the agents an agent grants (`agents`): one granted is a widening,
//! one no longer granted a narrowing, one whose manifest SHA-256 changed a widening to
//! re-review; and a manifest that grants none has no `agents` key, so its bytes are those of
//! a manifest written before the key existed.

use agents_core::diff::{ChangeKind, Rule, diff};
use agents_core::manifest::{AgentEntry, Manifest, ManifestError};
use agents_core::subagent::SubAgentEntry;

fn granting(agents: &[(&str, &str)]) -> Manifest {
    let agents = agents.iter().map(|(n, h)| SubAgentEntry { name: (*n).into(), sha256: (*h).into() }).collect();
    Manifest::from_entries(AgentEntry { agents, ..AgentEntry::new("supervisor", "Supervises.") }, vec![]).unwrap()
}

/// The one change from `a` to `b`, with its rule and kind.
fn only(a: &Manifest, b: &Manifest, rule: Rule, kind: ChangeKind) -> String {
    let d = diff(a, b);
    assert_eq!(d.changes.len(), 1, "{d}");
    assert_eq!((d.changes[0].rule, d.changes[0].kind), (rule, kind), "{d}");
    assert_eq!(d.has_widening(), kind == ChangeKind::Widening, "{d}");
    d.changes[0].reason.clone()
}

#[test]
fn granting_an_agent_widens_and_ungranting_it_narrows() {
    let (none, one) = (granting(&[]), granting(&[("second-reviewer", "aa11")]));
    let why = only(&none, &one, Rule::AgentGranted, ChangeKind::Widening);
    assert!(why.contains("second-reviewer") && why.contains("as a tool"), "{why}");
    only(&one, &none, Rule::AgentUngranted, ChangeKind::Narrowing);
}

#[test]
fn a_granted_agent_whose_hash_changed_is_a_widening_to_review() {
    let (old, new) = (granting(&[("second-reviewer", "aa11")]), granting(&[("second-reviewer", "bb22")]));
    let why = only(&old, &new, Rule::GrantedAgentChanged, ChangeKind::Widening);
    assert!(why.contains("review the diff of its own manifest"), "{why}");
    // The same hash: nothing to report.
    assert!(diff(&old, &old.clone()).changes.is_empty());
}

#[test]
fn no_granted_agent_writes_no_key_and_granted_ones_are_sorted_by_name() {
    assert!(!granting(&[]).to_canonical_string().contains("\"agents\""));
    let text = granting(&[("b", "22"), ("a", "11")]).to_canonical_string();
    assert!(text.contains(r#""agents":[{"name":"a","sha256":"11"},{"name":"b","sha256":"22"}]"#), "{text}");
    let read = Manifest::parse(&text).unwrap();
    assert_eq!(read.to_canonical_string(), text);
}

#[test]
fn two_granted_agents_of_one_name_are_refused() {
    let agents = vec![
        SubAgentEntry { name: "a".into(), sha256: "11".into() },
        SubAgentEntry { name: "a".into(), sha256: "22".into() },
    ];
    let err = Manifest::from_entries(AgentEntry { agents, ..AgentEntry::new("s", "S.") }, vec![]).unwrap_err();
    assert_eq!(err, ManifestError::DuplicateAgent("a".into()));
}

/// A manifest with one handoff tool, `to_hr`, handing to `target` (none: it files a record).
fn handing(target: Option<(&str, &str)>) -> Manifest {
    let tool = agents_core::manifest::ToolEntry {
        name: "to_hr".into(),
        title: None,
        description: "Hands leave questions to HR.".into(),
        permission: "public".into(),
        tier: agents_core::Tier::Handoff,
        mutating: false,
        risk: agents_core::Risk::Medium,
        policy: Default::default(),
        parameters: vec![],
        uses: vec![],
        import: None,
        handoff: target.map(|(n, h)| SubAgentEntry { name: n.into(), sha256: h.into() }),
    };
    Manifest::from_entries(AgentEntry::new("it", "IT."), vec![tool]).unwrap()
}

#[test]
fn a_handoff_target_named_widens_and_no_longer_named_narrows() {
    let (record, target) = (handing(None), handing(Some(("hr", "aa11"))));
    let why = only(&record, &target, Rule::HandoffTargetAdded, ChangeKind::Widening);
    assert!(why.contains("`hr`") && why.contains("every tool it reaches"), "{why}");
    let why = only(&target, &record, Rule::HandoffTargetRemoved, ChangeKind::Narrowing);
    assert!(why.contains("no longer hands the run to the agent `hr`"), "{why}");
}

#[test]
fn a_handoff_target_changed_is_a_widening_to_review() {
    let old = handing(Some(("hr", "aa11")));
    for new in [handing(Some(("hr", "bb22"))), handing(Some(("payroll", "aa11")))] {
        let why = only(&old, &new, Rule::HandoffTargetChanged, ChangeKind::Widening);
        assert!(why.contains("review the diff of its own manifest"), "{why}");
    }
    assert!(diff(&old, &old.clone()).changes.is_empty());
}

#[test]
fn a_handoff_without_a_target_writes_no_key_and_one_with_a_target_reads_back() {
    // The tier is still `"handoff"`; the tool's entry has no `"handoff":` key.
    let untargeted = handing(None).to_canonical_string();
    assert!(untargeted.contains(r#""tier":"handoff""#) && !untargeted.contains(r#""handoff":"#), "{untargeted}");
    let text = handing(Some(("hr", "aa11"))).to_canonical_string();
    assert!(text.contains(r#""handoff":{"name":"hr","sha256":"aa11"}"#), "{text}");
    assert_eq!(Manifest::parse(&text).unwrap().to_canonical_string(), text);
}
