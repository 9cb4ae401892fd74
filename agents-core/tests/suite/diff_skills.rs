//! Skills that scope, in the manifest diff and the capability report: a skill that now offers an action tool it did not
//! offer (a new skill, a tool moved into a skill, `unskilled: shared`) is a widening; every
//! other regrouping is not. The last test compares the diff with a plain reading of the rule
//! over every layout of two skills on three tools.

use agents_core::diff::{ChangeKind, Rule, diff};
use agents_core::manifest::{AgentEntry, Manifest, PolicyEntry, SkillEntry, ToolEntry};
use agents_core::skill::Unskilled;
use agents_core::{Risk, Tier};
use std::collections::BTreeSet;

const TOOLS: [(&str, Tier); 3] = [("lookup", Tier::Read), ("submit", Tier::Action), ("reset", Tier::Handoff)];

fn tool(name: &str, tier: Tier) -> ToolEntry {
    ToolEntry {
        name: name.into(),
        title: (tier == Tier::Action).then(|| format!("Run {name}")),
        description: format!("The {name} tool."),
        permission: "desk.use".into(),
        tier,
        mutating: tier == Tier::Action,
        risk: Risk::Medium,
        policy: PolicyEntry::default(),
        parameters: vec![],
        uses: vec![],
        import: None,
        handoff: None,
    }
}

/// A manifest granting the three tools, with these skills and `unskilled`.
fn manifest(skills: &[(&str, &[&str])], unskilled: Unskilled) -> Manifest {
    let skills = skills
        .iter()
        .map(|(n, t)| SkillEntry { name: (*n).into(), tools: t.iter().map(|t| (*t).into()).collect(), io: None })
        .collect();
    let agent = AgentEntry { skills, unskilled, ..AgentEntry::new("desk", "Answers staff questions.") };
    Manifest::from_entries(agent, TOOLS.iter().map(|(n, t)| tool(n, *t)).collect()).unwrap()
}

fn rules(old: &Manifest, new: &Manifest) -> Vec<(Rule, ChangeKind)> {
    diff(old, new).changes.iter().map(|c| (c.rule, c.kind)).collect()
}

#[test]
fn a_new_skill_reaching_an_action_widens_and_one_reaching_reads_does_not() {
    let old = manifest(&[("triage", &["lookup"])], Unskilled::None);
    let new = manifest(&[("triage", &["lookup"]), ("decide", &["submit"])], Unskilled::None);
    let d = diff(&old, &new);
    assert!(d.has_widening(), "{d}");
    let w: Vec<_> = d.of_kind(ChangeKind::Widening).collect();
    assert_eq!(w.len(), 1, "{d}");
    assert_eq!((w[0].rule, w[0].tool.as_deref()), (Rule::SkillReachesAction, Some("submit")));
    assert!(w[0].reason.contains("new skill `decide` offers action tool `submit`"), "{}", w[0].reason);
    // The same new skill reaching a read and a handoff only: neutral.
    let new = manifest(&[("triage", &["lookup"]), ("decide", &["lookup", "reset"])], Unskilled::None);
    assert_eq!(rules(&old, &new), vec![(Rule::SkillsChanged, ChangeKind::Neutral)]);
}

#[test]
fn an_action_moved_into_a_skill_widens_and_moved_out_does_not() {
    let old = manifest(&[("triage", &["lookup"])], Unskilled::None);
    let new = manifest(&[("triage", &["lookup", "submit"])], Unskilled::None);
    let d = diff(&old, &new);
    assert!(d.has_widening(), "{d}");
    let w = d.of_kind(ChangeKind::Widening).next().unwrap();
    assert!(w.reason.contains("action tool `submit` moved into skill `triage`"), "{}", w.reason);
    assert!(!diff(&new, &old).has_widening(), "{}", diff(&new, &old));
}

#[test]
fn sharing_unskilled_tools_widens_only_when_an_action_is_among_them() {
    let (old, new) = (
        manifest(&[("triage", &["lookup"])], Unskilled::None),
        manifest(&[("triage", &["lookup"])], Unskilled::Shared),
    );
    let d = diff(&old, &new);
    assert!(d.has_widening(), "{d}");
    assert!(d.changes.iter().any(|c| c.rule == Rule::UnskilledChanged && c.kind == ChangeKind::Neutral), "{d}");
    assert!(
        d.changes.iter().any(|c| c.rule == Rule::SkillReachesAction && c.reason.contains("unskilled: shared")),
        "{d}"
    );
    // Back to `none`: a narrowing, nothing widens.
    let back = diff(&new, &old);
    assert!(!back.has_widening(), "{back}");
    assert_eq!(rules(&new, &old), vec![(Rule::UnskilledChanged, ChangeKind::Narrowing)]);
    // Every action already in a skill: sharing the rest (a read, a handoff) widens nothing.
    let (old, new) = (
        manifest(&[("decide", &["submit"])], Unskilled::None),
        manifest(&[("decide", &["submit"])], Unskilled::Shared),
    );
    assert_eq!(rules(&old, &new), vec![(Rule::UnskilledChanged, ChangeKind::Neutral)]);
}

#[test]
fn unskilled_none_is_left_out_of_the_manifest_and_shared_is_written() {
    let none = manifest(&[("triage", &["lookup"])], Unskilled::None).to_canonical_string();
    assert!(!none.contains("unskilled"), "{none}");
    let shared = manifest(&[("triage", &["lookup"])], Unskilled::Shared).to_canonical_string();
    assert!(shared.contains(r#""unskilled":"shared""#), "{shared}");
    assert_eq!(Manifest::parse(&shared).unwrap().agent.unskilled, Unskilled::Shared);
    let wrong = shared.replace(r#""unskilled":"shared""#, r#""unskilled":"everyone""#);
    assert!(Manifest::parse(&wrong).is_err());
}

/// Skills (each a name and its tools) and `unskilled`.
type Layout = (Vec<(&'static str, Vec<&'static str>)>, Unskilled);

/// Every layout: each of two skills absent or present with any subset of the three tools,
/// and `unskilled` either way.
fn layouts() -> Vec<Layout> {
    let subsets: Vec<Vec<&str>> = (0..8u8)
        .map(|m| TOOLS.iter().enumerate().filter(|(i, _)| m & (1 << i) != 0).map(|(_, t)| t.0).collect())
        .collect();
    let choices: Vec<Option<&Vec<&str>>> = std::iter::once(None).chain(subsets.iter().map(Some)).collect();
    let mut out = Vec::new();
    for a in &choices {
        for b in &choices {
            for u in [Unskilled::None, Unskilled::Shared] {
                let skills = [("a", a), ("b", b)].into_iter().filter_map(|(n, t)| Some((n, (*t)?.clone()))).collect();
                out.push((skills, u));
            }
        }
    }
    out
}

/// The actions skill `name` offers in a layout, read plainly from the rule's words.
fn actions_offered(skills: &[(&str, Vec<&str>)], unskilled: Unskilled, name: &str) -> BTreeSet<&'static str> {
    let Some((_, listed)) = skills.iter().find(|(n, _)| *n == name) else { return BTreeSet::new() };
    let in_some_skill = |t: &str| skills.iter().any(|(_, ts)| ts.contains(&t));
    TOOLS
        .iter()
        .filter(|(_, tier)| *tier == Tier::Action)
        .map(|(t, _)| *t)
        .filter(|t| listed.contains(t) || (unskilled == Unskilled::Shared && !in_some_skill(t)))
        .collect()
}

#[test]
fn the_diff_widens_exactly_when_a_skill_reaches_an_action_it_did_not() {
    let all = layouts();
    let built: Vec<Manifest> =
        all.iter().map(|(s, u)| manifest(&s.iter().map(|(n, t)| (*n, t.as_slice())).collect::<Vec<_>>(), *u)).collect();
    for (i, (sa, ua)) in all.iter().enumerate() {
        for (j, (sb, ub)) in all.iter().enumerate() {
            let expected =
                sb.iter().any(|(name, _)| !actions_offered(sb, *ub, name).is_subset(&actions_offered(sa, *ua, name)));
            let d = diff(&built[i], &built[j]);
            assert_eq!(d.has_widening(), expected, "{sa:?} {ua:?} -> {sb:?} {ub:?}:\n{d}");
        }
    }
}

#[test]
fn the_report_shows_the_skills_and_what_tools_in_no_skill_serve() {
    use agents_core::report::{Report, render};
    let none = manifest(&[("decide", &["lookup", "submit"])], Unskilled::None);
    let html = render(&Report::new(&none, "desk.manifest.json", "0"));
    assert!(html.contains("<tr><th>skills</th><td>decide: lookup, submit; a run works within one"), "{html}");
    assert!(html.contains("tools in no skill: offered under no skill"), "{html}");
    assert!(html.contains("(no skill: offered under none)"), "the graph's group of `reset`");
    let shared = manifest(&[("decide", &["lookup", "submit"])], Unskilled::Shared);
    let html = render(&Report::new(&shared, "desk.manifest.json", "0"));
    assert!(html.contains("tools in no skill: shared by every skill"), "{html}");
    assert!(html.contains("(no skill: shared by every skill)"));
    let plain = manifest(&[], Unskilled::None);
    let html = render(&Report::new(&plain, "desk.manifest.json", "0"));
    assert!(html.contains("<tr><th>skills</th><td>none declared (every run is offered every tool)"), "{html}");
}
