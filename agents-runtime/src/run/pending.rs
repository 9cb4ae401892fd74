//! Proposals waiting for a person, as the state store keeps them: the card a decider lists
//! ([`PendingDecision`]), runtime-minted call ids, and the runtime's own side of a stored
//! proposal (its detail, its seals). The ledger (`ledger`) moves it there; the
//! decisions API on top of it ([`Runtime::pending_decisions`](super::Runtime::pending_decisions),
//! [`Runtime::decide_async`](super::Runtime::decide_async)) is in `decide`.
//!
//! A dialog proposal (and a direct session's, and a model run's with a
//! [`Confirmer`](super::Confirmer)) is put in the store under a call id the runtime mints
//! before the person is asked. From then on a decision is one conditional update there,
//! whatever node or channel it comes through, and an approved call runs only on the node whose
//! claim of its execution the store granted (exactly one).

use super::decision::{DeciderView, DecisionError, Verdict};
use crate::store::{ProposalRecord, Store, StoreError, StoredVerdict};
use agents_core::Principal;
use serde_json::{Value, json};
use std::sync::Arc;

/// One proposal waiting for a person, as its decider may see it.
///
/// Listed by [`Runtime::pending_decisions`](super::Runtime::pending_decisions) from the state store, so a confirm request that a
/// slow event subscriber missed (events are a lossy live view) is still listed and decidable,
/// on any node sharing the store.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct PendingDecision {
    /// The call's id, minted by the runtime (never a model provider's): what
    /// [`Runtime::decide`](super::Runtime::decide) and [`Runtime::decide_async`](super::Runtime::decide_async) take.
    pub call_id: String,
    /// The run that proposed it.
    pub run_id: String,
    /// The run's session.
    pub session_id: Option<String>,
    /// The agent.
    pub agent: String,
    /// The tool.
    pub tool: String,
    /// The title a person reads.
    pub title: String,
    /// The tool's declared risk (`low`, `medium`, `high`, `critical`).
    pub risk: String,
    /// The arguments as the audit log holds them: secret values masked.
    pub arguments: Value,
    /// Why a person is asked beyond the tool's tier, as the confirm card says it: for a tool
    /// that reaches the outside world, which argument was copied from which tool result.
    /// Absent for a plain action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Where each argument value came from, as the card shows it (see
    /// [`crate::provenance`]); absent for a call the check did not assess.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origins: Option<crate::provenance::Provenance>,
    /// The arguments as the tool will receive them, secret values included: the card of the
    /// person the run acts for (the only principal this list is ever made for). Not
    /// serialized: a front end adds it deliberately to the answer for that person.
    #[serde(skip)]
    pub decider_arguments: DeciderView,
    /// When it was proposed (RFC 3339, UTC).
    pub proposed_at: String,
    /// The warning a second confirmation must acknowledge, when the application's policy asks
    /// one of this proposal (see [`crate::untrusted`]): a first approval runs nothing. Absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acknowledge: Option<String>,
}

/// A fresh call id for a proposal: the runtime's own, unique per call (a provider's ids, such
/// as `call_1`, repeat across runs).
pub(super) fn new_call_id() -> String {
    format!("call-{}", uuid::Uuid::new_v4().simple())
}

/// The fields of [`ProposalRecord::detail`] the runtime writes.
pub(super) mod detail {
    pub(in crate::run) const ROLE: &str = "role";
    pub(in crate::run) const AGENT: &str = "agent";
    pub(in crate::run) const MANIFEST: &str = "manifest_sha256";
    pub(in crate::run) const RISK: &str = "risk";
    pub(in crate::run) const PROPOSED_AT: &str = "proposed_at";
    pub(in crate::run) const SUBJECT: &str = "subject";
    pub(in crate::run) const ARGUMENTS: &str = "arguments";
    pub(in crate::run) const SLOT: &str = "slot";
    pub(in crate::run) const REQUEST: &str = "request_id";
    pub(in crate::run) const WHY: &str = "why";
    pub(in crate::run) const ORIGINS: &str = "origins";
    /// Set on a proposal that waits in its session for the user's next message.
    pub(in crate::run) const CONVERSATIONAL: &str = "conversational";
    /// The warning a second confirmation must acknowledge (see [`crate::untrusted`]); part of
    /// the proposal's seal.
    pub(in crate::run) const ACKNOWLEDGE: &str = "acknowledge";
}

/// A text field of a proposal's detail (empty when absent).
pub(super) fn detail_str<'a>(p: &'a ProposalRecord, key: &str) -> &'a str {
    p.detail.get(key).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn stored(verdict: Verdict) -> StoredVerdict {
    match verdict {
        Verdict::Approve => StoredVerdict::Approved,
        Verdict::Reject => StoredVerdict::Rejected,
    }
}

/// The verdict the store holds.
pub(super) fn verdict_of(stored: StoredVerdict) -> Verdict {
    match stored {
        StoredVerdict::Approved => Verdict::Approve,
        StoredVerdict::Rejected => Verdict::Reject,
    }
}

pub(super) fn unavailable(e: StoreError) -> DecisionError {
    DecisionError::Unavailable(e.to_string())
}

/// The `reason` of a `rejected` record: that the user declined, and the reason they gave.
pub(super) fn declined(reason: Option<&str>) -> String {
    match reason {
        Some(why) => format!("the user declined: {why}"),
        None => "the user declined".to_owned(),
    }
}

/// A decision as a waiting call hears it through this runtime.
pub(super) struct Heard {
    pub(super) verdict: Verdict,
    /// Already recorded in the store (else the waiting call records it).
    pub(super) recorded: bool,
    /// The reason given with a rejection.
    pub(super) reason: Option<String>,
}

/// What the store keeps of a proposal beside the card: the detail [`ProposalRecord::detail`]
/// documents.
pub(super) fn detail_of(
    principal: &Principal,
    agent: &str,
    manifest: &str,
    risk: &str,
    arguments: &Value,
    slot: Option<&str>,
    request_id: &str,
    card: &super::decision::Card,
) -> Value {
    json!({
        detail::WHY: card.why,
        detail::ORIGINS: card.origins,
        detail::ROLE: principal.role,
        detail::AGENT: agent,
        detail::MANIFEST: manifest,
        detail::RISK: risk,
        detail::PROPOSED_AT: super::record::now_rfc3339(),
        detail::SUBJECT: principal.subject,
        detail::ARGUMENTS: arguments,
        detail::SLOT: slot,
        detail::REQUEST: request_id,
        detail::ACKNOWLEDGE: card.acknowledge,
    })
}

/// The seals of a stored proposal ([`ProposalRecord::seal`]): HMACs under the server key that
/// only a node holding the key can compute, one per state a runtime writes. The store keeps the
/// current one; a runtime carries out an approved call only when the row's seal is the one its
/// key gives for the row as read, so a row written or edited by someone without the key (a
/// verdict set to approved, another row's arguments and MAC copied in, the tool, user or
/// session changed) runs nothing.
pub(crate) mod seal {
    use super::{detail, detail_str};
    use crate::store::{ProposalRecord, StoredVerdict};
    use crate::token::{TokenStore, constant_time_eq};

    /// The `failed` record's reason for a call whose stored proposal or approval does not
    /// verify.
    pub(crate) const FORGED: &str = "the stored proposal or its approval does not verify under the server key (it was written or edited in the state store without the key, or this node's server key differs from the proposing node's); nothing ran";

    /// The seal of an undecided proposal: everything that decides what runs and for whom.
    pub(crate) fn proposed(tokens: &TokenStore, p: &ProposalRecord) -> String {
        let subject = match p.detail.get(detail::SUBJECT).and_then(serde_json::Value::as_str) {
            Some(subject) => format!("={subject}"),
            None => String::new(),
        };
        let mut parts = vec![
            "proposal",
            &p.call_id,
            &p.run_id,
            &p.session_id,
            &p.org_id,
            &p.user_id,
            detail_str(p, detail::ROLE),
            &subject,
            detail_str(p, detail::AGENT),
            detail_str(p, detail::MANIFEST),
            &p.tool,
            &p.args_mac,
        ];
        // A proposal that needs a second confirmation seals its warning (rows without one keep
        // the seal they always had).
        let warning = detail_str(p, detail::ACKNOWLEDGE);
        if !warning.is_empty() {
            parts.extend(["acknowledge", warning]);
        }
        // A node's proposal seals its place in its run tree (rows of runs of their own keep
        // the seal they always had).
        let place = crate::run::place::sealed_parts(p);
        if !place.is_empty() {
            parts.push("node");
            parts.extend(place.iter().map(String::as_str));
        }
        tokens.mac(&parts)
    }

    /// What a second confirmation of `p` must acknowledge, when it needs one: its warning and
    /// the keyed digest of its seal and warning (see [`crate::untrusted::Acknowledgement`]).
    pub(crate) fn acknowledgement(
        tokens: &TokenStore,
        p: &ProposalRecord,
    ) -> Option<crate::untrusted::Acknowledgement> {
        let warning = detail_str(p, detail::ACKNOWLEDGE);
        (!warning.is_empty()).then(|| {
            let digest = tokens.mac(&["acknowledged", &proposed(tokens, p), warning]);
            crate::untrusted::Acknowledgement::new(&p.call_id, warning, digest)
        })
    }

    /// The seal of a decided proposal: the proposal's, the verdict and its decider (the run's
    /// own user and organisation, the only ones [`Store::decide`](crate::store::Store::decide)
    /// accepts).
    pub(crate) fn decided(tokens: &TokenStore, p: &ProposalRecord, verdict: StoredVerdict) -> String {
        tokens.mac(&["decided", &proposed(tokens, p), verdict.as_str(), &p.org_id, &p.user_id])
    }

    /// The seal of an approved proposal whose execution `node` claimed.
    pub(crate) fn claimed(tokens: &TokenStore, p: &ProposalRecord, node: &str) -> String {
        claimed_after(tokens, &decided(tokens, p, StoredVerdict::Approved), node)
    }

    /// [`claimed`] from the seal of the approval it follows.
    pub(crate) fn claimed_after(tokens: &TokenStore, approved: &str, node: &str) -> String {
        tokens.mac(&["claimed", approved, node])
    }

    /// Whether `p` (as read from the store) holds the seal of an undecided proposal.
    pub(crate) fn holds_proposed(tokens: &TokenStore, p: &ProposalRecord) -> bool {
        constant_time_eq(p.seal.as_bytes(), proposed(tokens, p).as_bytes())
    }

    /// Whether `p` (as read from the store) holds the seal of an approval of itself, not yet
    /// claimed.
    pub(crate) fn holds_approval(tokens: &TokenStore, p: &ProposalRecord) -> bool {
        constant_time_eq(p.seal.as_bytes(), decided(tokens, p, StoredVerdict::Approved).as_bytes())
    }

    /// The seal a claim of `p`'s execution by `node` writes: the claimed seal when `p` holds a
    /// sealed approval, and none otherwise (the claim then only stops everyone else from
    /// carrying out a row that does not verify).
    pub(crate) fn for_claim(tokens: &TokenStore, p: &ProposalRecord, node: &str) -> String {
        if holds_approval(tokens, p) { claimed(tokens, p, node) } else { String::new() }
    }
}

/// The principal a stored proposal's run acted for.
pub(super) fn principal_of(p: &ProposalRecord) -> Principal {
    let mut principal = Principal::new(p.user_id.as_str(), p.org_id.as_str(), detail_str(p, detail::ROLE));
    principal.subject = p.detail.get(detail::SUBJECT).and_then(Value::as_str).map(str::to_owned);
    principal
}

/// Keeps the store's handle for background withdrawals.
pub(super) type SharedStore = Arc<dyn Store>;
