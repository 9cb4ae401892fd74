//! Where a proposal's run sat in a composite's run tree, as the state store keeps it beside
//! the proposal (its `node` detail), so that the records a resumption writes after a restart
//! carry the node's place ([`AuditRecord::node`](crate::audit::AuditRecord::node)) and the
//! resumption can close the tree's root run.
//!
//! The place is written by the run that proposes, with a MAC under the server key over the
//! call id and every field, and it is part of the proposal's seal: a place edited in the
//! store by someone without the key is never recorded (the records then carry no place), and
//! an approval of such a row runs nothing (its seal does not verify).

use crate::audit::AuditNode;
use crate::store::ProposalRecord;
use crate::token::{TokenStore, constant_time_eq};
use serde_json::{Value, json};

/// The detail key of a proposal's place.
pub(super) const NODE: &str = "node";

/// A proposal's place in its run tree, as the store keeps it (verified).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TreePlace {
    /// The node's place, as its records hold it (the tree's run id and the node's path).
    pub(super) node: AuditNode,
    /// The tree's composite: its name and its graph manifest's hash.
    pub(super) composite: String,
    pub(super) composite_sha256: String,
}

impl TreePlace {
    /// The tree's root run id.
    pub(super) fn tree_run_id(&self) -> &str {
        self.node.parent_run_id.as_deref().unwrap_or_default()
    }

    fn parts<'a>(&'a self, call_id: &'a str) -> [&'a str; 6] {
        ["node", call_id, self.tree_run_id(), &self.node.path, &self.composite, &self.composite_sha256]
    }

    /// The place as the detail keeps it, with its MAC.
    pub(super) fn to_detail(&self, tokens: &TokenStore, call_id: &str) -> Value {
        json!({
            "parent_run_id": self.tree_run_id(),
            "path": self.node.path,
            "composite": self.composite,
            "composite_sha256": self.composite_sha256,
            "mac": tokens.mac(&self.parts(call_id)),
        })
    }
}

/// The fields of `p`'s place as they stand in the row (verified or not), for its seal.
pub(super) fn sealed_parts(p: &ProposalRecord) -> Vec<String> {
    let Some(place) = p.detail.get(NODE) else { return Vec::new() };
    ["parent_run_id", "path", "composite", "composite_sha256", "mac"]
        .iter()
        .map(|k| place.get(*k).and_then(Value::as_str).unwrap_or_default().to_owned())
        .collect()
}

/// `p`'s place, when its row holds one whose MAC verifies under `tokens`' key; `None` for a
/// run of its own, and for a place edited without the key (logged).
pub(super) fn place_of(tokens: &TokenStore, p: &ProposalRecord) -> Option<TreePlace> {
    let place = p.detail.get(NODE)?;
    let text = |k: &str| place.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let read = TreePlace {
        node: AuditNode { parent_run_id: Some(text("parent_run_id")), path: text("path") },
        composite: text("composite"),
        composite_sha256: text("composite_sha256"),
    };
    let mac = text("mac");
    if constant_time_eq(mac.as_bytes(), tokens.mac(&read.parts(&p.call_id)).as_bytes()) {
        Some(read)
    } else {
        tracing::error!(call_id = %p.call_id, "a stored proposal's place in its run tree does not verify; not recorded");
        None
    }
}
