//! A tool's parameters: added, removed, retyped, made secret or not, reordered.

use super::model::{Change, ChangeKind, change};
use super::rule::Rule;
use crate::manifest::ParamEntry;
use std::collections::{BTreeMap, BTreeSet};

/// Every change of tool `tool`'s parameters from `a` to `b`: parameter by parameter in name
/// order, then their order.
pub(super) fn diff_params(tool: &str, a: &[ParamEntry], b: &[ParamEntry], out: &mut Vec<Change>) {
    let old: BTreeMap<&str, &ParamEntry> = a.iter().map(|p| (p.name.as_str(), p)).collect();
    let new: BTreeMap<&str, &ParamEntry> = b.iter().map(|p| (p.name.as_str(), p)).collect();
    let names: BTreeSet<&str> = old.keys().chain(new.keys()).copied().collect();
    for p in names {
        match (old.get(p), new.get(p)) {
            (None, Some(n)) => out.push(added(tool, p, n)),
            (Some(o), None) => out.push(removed(tool, p, o)),
            (Some(o), Some(n)) => diff_param(tool, p, o, n, out),
            (None, None) => {}
        }
    }
    let kept = |ps: &[ParamEntry]| -> Vec<String> {
        ps.iter()
            .filter(|p| old.contains_key(p.name.as_str()) && new.contains_key(p.name.as_str()))
            .map(|p| p.name.clone())
            .collect()
    };
    out.extend(reordered(tool, &kept(a), &kept(b)));
}

/// A new parameter: the model controls a new input (widening).
fn added(tool: &str, p: &str, n: &ParamEntry) -> Change {
    change(
        ChangeKind::Widening,
        Rule::ParameterAdded,
        Some(tool),
        &format!("parameters.{p}"),
        None,
        Some(n.rust_type.clone()),
        format!(
            "parameter `{p}: {}`{} added: the model controls a new input",
            n.rust_type,
            if n.is_secret() { " (secret)" } else { "" }
        ),
    )
}

/// A parameter gone (narrowing).
fn removed(tool: &str, p: &str, o: &ParamEntry) -> Change {
    change(
        ChangeKind::Narrowing,
        Rule::ParameterRemoved,
        Some(tool),
        &format!("parameters.{p}"),
        Some(o.rust_type.clone()),
        None,
        format!("parameter `{p}: {}` removed", o.rust_type),
    )
}

/// A parameter in both: whether it stopped or started being secret, and whether its type
/// changed.
fn diff_param(tool: &str, p: &str, o: &ParamEntry, n: &ParamEntry, out: &mut Vec<Change>) {
    let (name, field) = (Some(tool), format!("parameters.{p}"));
    let (os, ns) = (o.is_secret(), n.is_secret());
    if os && !ns {
        out.push(change(
            ChangeKind::Widening,
            Rule::SecretRemoved,
            name,
            &format!("{field}.secret"),
            Some("true".into()),
            Some("false".into()),
            format!(
                "`{p}` is no longer secret (`#[secret]` removed or its type no longer `Secret<..>`): its values will appear unmasked in audit records and confirm dialogs"
            ),
        ));
    } else if !os && ns {
        out.push(change(
            ChangeKind::Narrowing,
            Rule::SecretAdded,
            name,
            &format!("{field}.secret"),
            Some("false".into()),
            Some("true".into()),
            format!("`{p}` is now secret: its values will be masked"),
        ));
    }
    if o.rust_type != n.rust_type {
        out.push(change(
            ChangeKind::Widening,
            Rule::ParameterTypeChanged,
            name,
            &format!("{field}.type"),
            Some(o.rust_type.clone()),
            Some(n.rust_type.clone()),
            format!(
                "type of `{p}` changed from `{}` to `{}`: the manifest names types only, so that the new type admits no value the old one refused cannot be shown",
                o.rust_type, n.rust_type
            ),
        ));
    }
}

/// The parameters both lists hold, in another order (neutral).
fn reordered(tool: &str, oa: &[String], ob: &[String]) -> Option<Change> {
    (oa != ob).then(|| {
        change(
            ChangeKind::Neutral,
            Rule::ParametersReordered,
            Some(tool),
            "parameters",
            Some(oa.join(", ")),
            Some(ob.join(", ")),
            format!("parameters reordered from ({}) to ({})", oa.join(", "), ob.join(", ")),
        )
    })
}
