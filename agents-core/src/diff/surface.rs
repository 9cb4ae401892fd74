//! The agent's declarations beyond its tools: the models it may run on and its budget caps per
//! run.

use super::lists::{ListItem, list_diff};
use super::model::{Change, ChangeKind, change};
use super::rule::Rule;
use crate::budget::{BudgetEntry, usd_text};
use crate::manifest::AgentEntry;
use crate::models::ModelEntry;
use crate::policy::HostPattern;
use std::collections::BTreeMap;

/// The models and the budget.
pub(super) fn diff_surface(a: &AgentEntry, b: &AgentEntry, out: &mut Vec<Change>) {
    diff_models(a.models.as_deref(), b.models.as_deref(), out);
    diff_budget(&a.budget, &b.budget, out);
    super::audit_values::diff_audit_values(a.audit_values, b.audit_values, out);
}

/// A list of models shown in one line.
fn shown(models: &[ModelEntry]) -> String {
    models.iter().map(ModelEntry::to_string).collect::<Vec<_>>().join(", ")
}

/// `models` dropped (any provider: widening) or declared (narrowing); in a list, a model added
/// (widening, unless a kept entry covers it) or removed (narrowing, unless a new entry covers
/// it). An entry covers another of the same kind and model whose host pattern it covers.
fn diff_models(a: Option<&[ModelEntry]>, b: Option<&[ModelEntry]>, out: &mut Vec<Change>) {
    let (x, y) = match (a, b) {
        (None, None) => return,
        (Some(x), None) => {
            return out.push(change(
                ChangeKind::Widening,
                Rule::ModelsAny,
                None,
                "models",
                Some(shown(x)),
                None,
                "declared models removed: the agent may now run on any provider, model and host".to_owned(),
            ));
        }
        (None, Some(y)) => {
            return out.push(change(
                ChangeKind::Narrowing,
                Rule::ModelsDeclared,
                None,
                "models",
                None,
                Some(shown(y)),
                format!("models declared: the agent runs only on {}", shown(y)),
            ));
        }
        (Some(x), Some(y)) => (x, y),
    };
    let by_text: BTreeMap<String, &ModelEntry> = x.iter().chain(y).map(|m| (m.to_string(), m)).collect();
    let texts = |l: &[ModelEntry]| l.iter().map(ModelEntry::to_string).collect::<Vec<_>>();
    let covers = |wide: &str, narrow: &str| match (by_text.get(wide), by_text.get(narrow)) {
        (Some(w), Some(n)) => model_covers(w, n),
        _ => false,
    };
    let (old, new) = (texts(x), texts(y));
    for item in list_diff(&old, &new, covers) {
        let (kind, rule, old, new, reason) = match item {
            ListItem::Added { new } => (ChangeKind::Widening, Rule::ModelAdded, None, Some(new), added(new, x)),
            ListItem::Broadened { old, new } => {
                let why = format!("model `{old}` broadened to `{new}`: more hosts are admitted");
                (ChangeKind::Widening, Rule::ModelAdded, Some(old), Some(new), why)
            }
            ListItem::Removed { old } => {
                (ChangeKind::Narrowing, Rule::ModelRemoved, Some(old), None, format!("model `{old}` removed"))
            }
            ListItem::Narrowed { old, new } => {
                let why = format!("model `{old}` narrowed to `{new}`: fewer hosts are admitted");
                (ChangeKind::Narrowing, Rule::ModelRemoved, Some(old), Some(new), why)
            }
            ListItem::AddedCovered { new, by } => {
                let why = format!("model `{new}` added, already admitted by `{by}`");
                (ChangeKind::Neutral, Rule::ModelCovered, None, Some(new), why)
            }
            ListItem::RemovedCovered { old, by } => {
                let why = format!("model `{old}` removed, still admitted by `{by}`");
                (ChangeKind::Neutral, Rule::ModelCovered, Some(old), None, why)
            }
        };
        out.push(change(kind, rule, None, "models", old.cloned(), new.cloned(), reason));
    }
}

/// The reason of an added model, naming a host no old model used.
fn added(new: &str, old: &[ModelEntry]) -> String {
    let host = new.rsplit_once('@').map(|(_, h)| h);
    match host {
        Some(h) if !old.iter().any(|m| m.host.as_deref() == Some(h)) => {
            format!("model `{new}` added, on a new host `{h}`: prompts and tool results may now go there")
        }
        _ => format!("model `{new}` added"),
    }
}

/// Whether `wide` admits every provider `narrow` admits (see [`ModelEntry::admits`]).
fn model_covers(wide: &ModelEntry, narrow: &ModelEntry) -> bool {
    let host = |m: &ModelEntry| m.host.as_deref().and_then(|h| HostPattern::parse(h).ok());
    wide.provider == narrow.provider
        && wide.model == narrow.model
        && match (host(wide), host(narrow)) {
            (Some(w), Some(n)) => w.covers(&n),
            (None, None) => wide.host.is_none() && narrow.host.is_none(),
            _ => false,
        }
}

/// Each cap: removed or raised (widening), declared or lowered (narrowing).
fn diff_budget(a: &BudgetEntry, b: &BudgetEntry, out: &mut Vec<Change>) {
    for ((name, x), (_, y)) in a.caps().into_iter().zip(b.caps()) {
        let show = |v: u64| if name == "usd_per_run_micros" { format!("{} USD", usd_text(v)) } else { v.to_string() };
        let (kind, rule, reason) = match (x, y) {
            (Some(x), Some(y)) if x == y => continue,
            (None, None) => continue,
            (Some(x), None) => {
                (ChangeKind::Widening, Rule::BudgetCapRemoved, format!("budget cap {name} of {} removed", show(x)))
            }
            (None, Some(y)) => {
                (ChangeKind::Narrowing, Rule::BudgetCapDeclared, format!("budget cap {name} of {} declared", show(y)))
            }
            (Some(x), Some(y)) if y > x => (
                ChangeKind::Widening,
                Rule::BudgetCapRaised,
                format!("budget cap {name} raised from {} to {}", show(x), show(y)),
            ),
            (Some(x), Some(y)) => (
                ChangeKind::Narrowing,
                Rule::BudgetCapLowered,
                format!("budget cap {name} lowered from {} to {}", show(x), show(y)),
            ),
        };
        let text = |v: Option<u64>| v.map(|v| v.to_string());
        out.push(change(kind, rule, None, &format!("budget.{name}"), text(x), text(y), reason));
    }
}
