//! The agent's knowledge sources: added (widening: new text reaches the model), removed
//! (narrowing), contents changed (widening: the new text has not been reviewed), moved with
//! the same contents (neutral). Each change names the source.

use super::model::{Change, ChangeKind, change};
use super::rule::Rule;
use crate::knowledge::KnowledgeEntry;

/// A source as a change shows it: `path sha256:<first 12 hex> (n bytes)`.
fn shown(e: &KnowledgeEntry) -> String {
    format!("{} sha256:{} ({} bytes)", e.path, e.sha256.get(..12).unwrap_or(&e.sha256), e.bytes)
}

/// Every change of the knowledge sources, by source name.
pub(super) fn diff_knowledge(old: &[KnowledgeEntry], new: &[KnowledgeEntry], out: &mut Vec<Change>) {
    let field = |e: &KnowledgeEntry| format!("knowledge.{}", e.name);
    for a in old {
        match new.iter().find(|b| b.name == a.name) {
            None => out.push(change(
                ChangeKind::Narrowing,
                Rule::KnowledgeRemoved,
                None,
                &field(a),
                Some(shown(a)),
                None,
                format!("knowledge source `{}` removed", a.name),
            )),
            Some(b) if a.sha256 != b.sha256 || a.bytes != b.bytes => out.push(change(
                ChangeKind::Widening,
                Rule::KnowledgeChanged,
                None,
                &field(a),
                Some(shown(a)),
                Some(shown(b)),
                format!(
                    "knowledge source `{}` changed ({} to {} bytes): the model reads text no reviewer has read yet",
                    a.name, a.bytes, b.bytes
                ),
            )),
            Some(b) if a.path != b.path => out.push(change(
                ChangeKind::Neutral,
                Rule::KnowledgeMoved,
                None,
                &field(a),
                Some(shown(a)),
                Some(shown(b)),
                format!("knowledge source `{}` moved from `{}` to `{}`, its contents the same", a.name, a.path, b.path),
            )),
            Some(_) => {}
        }
    }
    for b in new.iter().filter(|b| !old.iter().any(|a| a.name == b.name)) {
        out.push(change(
            ChangeKind::Widening,
            Rule::KnowledgeAdded,
            None,
            &field(b),
            None,
            Some(shown(b)),
            format!(
                "knowledge source `{}` added ({} bytes from {}): new text reaches the model",
                b.name, b.bytes, b.path
            ),
        ));
    }
}
