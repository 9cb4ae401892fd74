//! The classification of the agent's knowledge sources: a source added widens, one removed
//! narrows, changed contents widen and name the source, a move with the same contents is
//! neutral. And the other way round: a diff with no widening means every source of the new
//! manifest was in the old one with the same SHA-256, so a run of the new manifest reads no
//! text the old one's reviewer had not approved.

use agents_core::canonical::sha256_hex;
use agents_core::diff::{ChangeKind, Rule, diff};
use agents_core::knowledge::KnowledgeEntry;
use agents_core::manifest::{AgentEntry, Manifest};
use proptest::prelude::*;

fn manifest(knowledge: Vec<KnowledgeEntry>) -> Manifest {
    let agent = AgentEntry { knowledge, ..AgentEntry::new("desk", "Answers.") };
    Manifest::from_entries(agent, vec![]).unwrap()
}

fn doc(name: &str, path: &str, text: &str) -> KnowledgeEntry {
    KnowledgeEntry::of_document(name, path, text.as_bytes())
}

fn only(a: &Manifest, b: &Manifest, rule: Rule, kind: ChangeKind) -> String {
    let d = diff(a, b);
    assert_eq!(d.changes.len(), 1, "{d}");
    assert_eq!((d.changes[0].rule, d.changes[0].kind), (rule, kind), "{d}");
    assert_eq!(d.changes[0].field, "knowledge.leave");
    d.changes[0].reason.clone()
}

#[test]
fn a_source_added_widens_and_one_removed_narrows() {
    let (none, one) = (manifest(vec![]), manifest(vec![doc("leave", "embedded", "25 days")]));
    let why = only(&none, &one, Rule::KnowledgeAdded, ChangeKind::Widening);
    assert!(why.contains("`leave` added"), "{why}");
    only(&one, &none, Rule::KnowledgeRemoved, ChangeKind::Narrowing);
}

#[test]
fn a_changed_document_changes_the_hash_and_widens_naming_its_source() {
    let old = manifest(vec![doc("leave", "policies/leave.md", "25 days"), doc("probation", "embedded", "6 months")]);
    let new = manifest(vec![doc("leave", "policies/leave.md", "30 days"), doc("probation", "embedded", "6 months")]);
    assert_ne!(old.sha256(), new.sha256());
    let why = only(&old, &new, Rule::KnowledgeChanged, ChangeKind::Widening);
    assert!(why.contains("`leave` changed"), "{why}");
    let change = &diff(&old, &new).changes[0];
    assert!(change.old.as_deref().unwrap().contains(&sha256_hex(b"25 days")[..12]), "{change:?}");
}

#[test]
fn a_move_with_the_same_contents_is_neutral() {
    let old = manifest(vec![doc("leave", "policies/leave.md", "25 days")]);
    let new = manifest(vec![doc("leave", "hr/leave.md", "25 days")]);
    only(&old, &new, Rule::KnowledgeMoved, ChangeKind::Neutral);
}

#[test]
fn the_knowledge_section_survives_the_manifest_text_and_two_sources_may_not_share_a_name() {
    let m = manifest(vec![doc("b", "embedded", "x"), doc("a", "a.md", "y")]);
    let back = Manifest::parse(&m.to_canonical_string()).unwrap();
    assert_eq!(back, m);
    assert_eq!(back.agent.knowledge[0].name, "a", "sorted by name");
    let agent = AgentEntry { knowledge: vec![doc("a", "embedded", "x"), doc("a", "a.md", "y")], ..m.agent.clone() };
    let e = Manifest::from_entries(agent, vec![]).unwrap_err();
    assert!(e.to_string().contains("two knowledge sources are named `a`"), "{e}");
    // No knowledge: the key is absent, so manifests without sources keep their bytes.
    assert!(!manifest(vec![]).to_canonical_string().contains("knowledge"));
}

fn entries() -> impl Strategy<Value = Vec<KnowledgeEntry>> {
    prop::collection::btree_map("[a-c]", ("[a-c]\\.md", "[xy]{1,2}"), 0..4)
        .prop_map(|m| m.into_iter().map(|(name, (path, text))| doc(&name, &path, &text)).collect())
}

proptest! {
    /// No widening ⇒ every new source was an old source with the same contents.
    #[test]
    fn no_widening_means_no_unreviewed_text(old in entries(), new in entries()) {
        let d = diff(&manifest(old.clone()), &manifest(new.clone()));
        let reviewed = new.iter().all(|b| old.iter().any(|a| a.name == b.name && a.sha256 == b.sha256));
        prop_assert_eq!(!d.has_widening(), reviewed, "{}", d);
    }
}
