//! The agent's input and output schemas, in a reviewed document ([`crate::reviewed`]), and
//! each typed skill's: an input schema that may accept a value the old one refused is a
//! widening (decided by [`admits_no_more`]); one that accepts less, a narrowing; an output
//! schema that changed is reported, neutral. A skill's input is compared as the agent's is,
//! by the same check.

use super::model::{Change, ChangeKind, ManifestDiff, change};
use super::rule::Rule;
use crate::reviewed::{Document, IoSchemas, admits_no_more};
use serde_json::Value;

/// The places a reason lists at most; the rest are counted.
const MAX_PLACES: usize = 6;

/// Compares two documents (manifests or reviewed documents): every change of the manifests
/// ([`super::diff`]), then of the schemas.
///
/// ```
/// use agents_core::diff::{Rule, diff_documents};
/// use agents_core::manifest::{AgentEntry, Manifest};
/// use agents_core::reviewed::{Document, IoSchemas};
/// use serde_json::json;
/// let manifest = Manifest::from_entries(AgentEntry::new("a", "d"), vec![]).unwrap();
/// let doc = |input| Document { manifest: manifest.clone(), io: Some(IoSchemas::new(input, json!(true))) };
/// let old = doc(json!({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": false}));
/// let new = doc(json!({"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string"}}, "additionalProperties": false}));
/// let d = diff_documents(&old, &new);
/// assert!(d.has_widening());
/// assert_eq!(d.changes[0].rule, Rule::InputSchemaWidened);
/// assert!(!diff_documents(&new, &old).has_widening());
/// ```
pub fn diff_documents(old: &Document, new: &Document) -> ManifestDiff {
    let mut d = super::diff(&old.manifest, &new.manifest);
    diff_io(old.io.as_ref(), new.io.as_ref(), &mut d.changes);
    d
}

fn diff_io(old: Option<&IoSchemas>, new: Option<&IoSchemas>, out: &mut Vec<Change>) {
    let (a, b) = match (old, new) {
        (None, None) => return,
        (Some(a), Some(b)) => (a, b),
        (a, _) => {
            let which = if a.is_none() { "old" } else { "new" };
            out.push(change(
                ChangeKind::Widening,
                Rule::SchemasNotCompared,
                None,
                "io",
                None,
                None,
                format!(
                    "the {which} document is a plain manifest with no input schema, so no value is shown to have been refused; compare two reviewed documents"
                ),
            ));
            return;
        }
    };
    diff_input(&a.input, &b.input, "io.input", "the input schema", out);
    diff_output(&a.output, &b.output, out);
    diff_skills(a, b, out);
}

/// Each typed skill's input schema, with the same check as the agent's: a skill's input is
/// its own schema when it is typed, else the agent's, so a skill that becomes typed (or stops
/// being) is compared against what it took before. Its output schema is reported like the
/// agent's.
fn diff_skills(a: &IoSchemas, b: &IoSchemas, out: &mut Vec<Change>) {
    let names: std::collections::BTreeSet<&String> = a.skills.keys().chain(b.skills.keys()).collect();
    for name in names {
        let place = format!("io.skills.{name}.input");
        let what = format!("the input schema of skill `{name}`");
        diff_input(a.input_of(name), b.input_of(name), &place, &what, out);
        if let (Some(x), Some(y)) = (a.skills.get(name), b.skills.get(name)) {
            let what = format!("the output schema of skill `{name}`");
            diff_output_at(&x.output, &y.output, &format!("io.skills.{name}.output"), &what, out);
        }
    }
}

fn diff_input(old: &Value, new: &Value, place: &str, what: &str, out: &mut Vec<Change>) {
    if old == new {
        return;
    }
    let (kind, rule, reason) = match (admits_no_more(old, new), admits_no_more(new, old)) {
        (Err(places), _) => (
            ChangeKind::Widening,
            Rule::InputSchemaWidened,
            format!("{what} may accept values the old one refused: {}", listed(&places)),
        ),
        (Ok(()), Ok(())) => (
            ChangeKind::Neutral,
            Rule::InputSchemaChanged,
            format!("{what} changed, and accepts the same values (annotations or an equivalent form)"),
        ),
        (Ok(()), Err(places)) => (
            ChangeKind::Narrowing,
            Rule::InputSchemaNarrowed,
            format!("{what} accepts only values the old one accepted, and refuses some: {}", listed(&places)),
        ),
    };
    out.push(change(kind, rule, None, place, None, None, reason));
}

fn diff_output(old: &Value, new: &Value, out: &mut Vec<Change>) {
    diff_output_at(old, new, "io.output", "the output schema", out);
}

fn diff_output_at(old: &Value, new: &Value, place: &str, what: &str, out: &mut Vec<Change>) {
    if old == new {
        return;
    }
    let how = match (admits_no_more(old, new).is_ok(), admits_no_more(new, old).is_ok()) {
        (true, true) => "its values the same (annotations or an equivalent form)",
        (true, false) => "fewer values than before",
        (false, _) => "values the old one did not describe",
    };
    out.push(change(
        ChangeKind::Neutral,
        Rule::OutputSchemaChanged,
        None,
        place,
        None,
        None,
        format!("{what} changed: the application may receive {how}"),
    ));
}

fn listed(places: &[String]) -> String {
    let mut text = places.iter().take(MAX_PLACES).cloned().collect::<Vec<_>>().join("; ");
    if places.len() > MAX_PLACES {
        text.push_str(&format!("; and {} more", places.len() - MAX_PLACES));
    }
    text
}
