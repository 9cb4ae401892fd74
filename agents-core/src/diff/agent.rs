//! The agent's own changes: its name, description and types, its permission ceiling, its
//! limits, its models and budget (in `surface`) and its skills (in `skills`).

use super::lists::{ListItem, list_diff};
use super::model::{Change, ChangeKind, change, quote};
use super::rule::Rule;
use crate::manifest::{AgentEntry, LimitsEntry, Manifest};

/// Every change of the agent itself (not of its tools), in the order a reviewer reads them.
pub(super) fn diff_agent(old: &Manifest, new: &Manifest, out: &mut Vec<Change>) {
    let (a, b) = (&old.agent, &new.agent);
    diff_identity(a, b, out);
    diff_ceiling(a.ceiling.as_deref(), b.ceiling.as_deref(), out);
    diff_limits(&a.limits, &b.limits, out);
    super::surface::diff_surface(a, b, out);
    super::skills::diff_skills(old, new, out);
}

/// The name, the description and the input and output types: neutral.
fn diff_identity(a: &AgentEntry, b: &AgentEntry, out: &mut Vec<Change>) {
    if a.name != b.name {
        out.push(change(
            ChangeKind::Neutral,
            Rule::AgentRenamed,
            None,
            "name",
            Some(a.name.clone()),
            Some(b.name.clone()),
            format!("agent renamed from `{}` to `{}`", a.name, b.name),
        ));
    }
    if a.description != b.description {
        out.push(change(
            ChangeKind::Neutral,
            Rule::AgentDescriptionChanged,
            None,
            "description",
            Some(a.description.clone()),
            Some(b.description.clone()),
            format!("description changed from {} to {}", quote(&a.description), quote(&b.description)),
        ));
    }
    for (field, x, y) in [("input", &a.input, &b.input), ("output", &a.output, &b.output)] {
        if x != y {
            out.push(change(
                ChangeKind::Neutral,
                Rule::IoTypeChanged,
                None,
                field,
                Some(x.clone()),
                Some(y.clone()),
                format!("type changed from `{x}` to `{y}`"),
            ));
        }
    }
}

/// The permission ceiling: removed (widening), declared (narrowing), or permissions added to
/// (widening) or removed from it (narrowing).
fn diff_ceiling(a: Option<&[String]>, b: Option<&[String]>, out: &mut Vec<Change>) {
    match (a, b) {
        (Some(c), None) => out.push(change(
            ChangeKind::Widening,
            Rule::CeilingRemoved,
            None,
            "ceiling",
            Some(c.join(", ")),
            None,
            "permission ceiling removed: tools of any permission may now be granted".to_owned(),
        )),
        (None, Some(c)) => out.push(change(
            ChangeKind::Narrowing,
            Rule::CeilingAdded,
            None,
            "ceiling",
            None,
            Some(c.join(", ")),
            format!(
                "permission ceiling declared: {}",
                c.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
            ),
        )),
        (Some(x), Some(y)) => {
            for item in list_diff(x, y, |a, b| a == b) {
                match item {
                    ListItem::Added { new, .. } => out.push(change(
                        ChangeKind::Widening,
                        Rule::CeilingRaised,
                        None,
                        "ceiling",
                        None,
                        Some(new.clone()),
                        format!("ceiling raised: `{new}` added"),
                    )),
                    ListItem::Removed { old, .. } => out.push(change(
                        ChangeKind::Narrowing,
                        Rule::CeilingLowered,
                        None,
                        "ceiling",
                        Some(old.clone()),
                        None,
                        format!("ceiling lowered: `{old}` removed"),
                    )),
                    _ => {}
                }
            }
        }
        (None, None) => {}
    }
}

/// Each default limit: raised (widening) or lowered (narrowing).
fn diff_limits(la: &LimitsEntry, lb: &LimitsEntry, out: &mut Vec<Change>) {
    for (name, x, y) in [
        ("max_iterations", u64::from(la.max_iterations), u64::from(lb.max_iterations)),
        ("provider_timeout_secs", la.provider_timeout_secs, lb.provider_timeout_secs),
        ("confirm_timeout_secs", la.confirm_timeout_secs, lb.confirm_timeout_secs),
        ("max_concurrent_runs", u64::from(la.max_concurrent_runs), u64::from(lb.max_concurrent_runs)),
        ("token_ttl_secs", la.token_ttl_secs, lb.token_ttl_secs),
        ("history_messages", u64::from(la.history_messages), u64::from(lb.history_messages)),
    ] {
        if x == y {
            continue;
        }
        let (kind, rule, verb) = if y > x {
            (ChangeKind::Widening, Rule::LimitRaised, "raised")
        } else {
            (ChangeKind::Narrowing, Rule::LimitLowered, "lowered")
        };
        out.push(change(
            kind,
            rule,
            None,
            &format!("limits.{name}"),
            Some(x.to_string()),
            Some(y.to_string()),
            format!("limit {name} {verb} from {x} to {y}"),
        ));
    }
}
