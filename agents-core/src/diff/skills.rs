//! The agent's skills: which tools each skill offers (see [`crate::skill`]). A skill that now
//! offers an action tool it did not offer is a widening; other regroupings are neutral, since
//! grants are compared tool by tool.

use super::model::{Change, ChangeKind, change};
use super::rule::Rule;
use crate::manifest::{AgentEntry, Manifest, SkillEntry};
use crate::skill::{Unskilled, offers};
use crate::tool::Tier;
use std::collections::BTreeSet;

/// Every change of the skills: the regrouping (neutral), `unskilled`, and each action tool a
/// skill reaches anew.
pub(super) fn diff_skills(old: &Manifest, new: &Manifest, out: &mut Vec<Change>) {
    let (a, b) = (&old.agent, &new.agent);
    regrouped(a, b, out);
    unskilled(a, b, out);
    for skill in &b.skills {
        let before: BTreeSet<&str> = match a.skills.iter().find(|s| s.name == skill.name) {
            Some(s) => offered(old, s),
            None => BTreeSet::new(),
        };
        let actions = offered(new, skill).into_iter().filter(|t| is_action(new, t) && !before.contains(t));
        for tool in actions {
            let how = if before.is_empty() && !a.skills.iter().any(|s| s.name == skill.name) {
                format!("new skill `{}` offers action tool `{tool}`", skill.name)
            } else if skill.tools.iter().any(|t| t == tool) {
                format!("action tool `{tool}` moved into skill `{}`", skill.name)
            } else {
                format!(
                    "action tool `{tool}` is offered under skill `{}` as a tool no skill lists (`unskilled: shared`)",
                    skill.name
                )
            };
            out.push(change(
                ChangeKind::Widening,
                Rule::SkillReachesAction,
                Some(tool),
                &format!("skills.{}", skill.name),
                None,
                Some(skill.name.clone()),
                format!("{how}: a run working within the skill may now propose it"),
            ));
        }
    }
}

/// The tools `skill` of manifest `m` offers.
fn offered<'a>(m: &'a Manifest, skill: &SkillEntry) -> BTreeSet<&'a str> {
    let listed = |t: &str, s: &SkillEntry| s.tools.iter().any(|n| n == t);
    m.tools
        .iter()
        .map(|t| t.name.as_str())
        .filter(|t| offers(listed(t, skill), m.agent.skills.iter().any(|s| listed(t, s)), m.agent.unskilled))
        .collect()
}

fn is_action(m: &Manifest, tool: &str) -> bool {
    m.tools.iter().any(|t| t.name == tool && t.tier == Tier::Action)
}

/// The skills regrouped: neutral (what each skill reaches anew is classified beside it).
fn regrouped(a: &AgentEntry, b: &AgentEntry, out: &mut Vec<Change>) {
    if a.skills == b.skills {
        return;
    }
    let show = |agent: &AgentEntry| {
        agent.skills.iter().map(|s| format!("{}: [{}]", s.label(), s.tools.join(", "))).collect::<Vec<_>>().join("; ")
    };
    out.push(change(
        ChangeKind::Neutral,
        Rule::SkillsChanged,
        None,
        "skills",
        Some(show(a)),
        Some(show(b)),
        format!(
            "skills regrouped from {{{}}} to {{{}}} (grants are compared tool by tool; an action a skill reaches anew is listed on its own)",
            show(a),
            show(b)
        ),
    ));
}

/// `unskilled`: `shared` → `none` narrows what skills offer; `none` → `shared` is neutral here,
/// each action tool it shares being a widening of its own.
fn unskilled(a: &AgentEntry, b: &AgentEntry, out: &mut Vec<Change>) {
    if a.unskilled == b.unskilled {
        return;
    }
    let (kind, why) = match b.unskilled {
        Unskilled::None => (ChangeKind::Narrowing, "tools no skill lists are no longer offered under any skill"),
        Unskilled::Shared => (
            ChangeKind::Neutral,
            "tools no skill lists are now offered under every skill (each action among them is listed as a widening)",
        ),
    };
    out.push(change(
        kind,
        Rule::UnskilledChanged,
        None,
        "unskilled",
        Some(a.unskilled.as_str().to_owned()),
        Some(b.unskilled.as_str().to_owned()),
        format!("unskilled changed from {} to {}: {why}", a.unskilled.as_str(), b.unskilled.as_str()),
    ));
}
