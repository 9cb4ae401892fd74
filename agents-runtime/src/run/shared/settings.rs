//! A runtime's settings: what its builder fixed, and what does not change while it lives
//! (the role map, modes, limits, timeouts, bounds, leases).

use crate::budget::BudgetFallback;
use crate::run::decision::ConfirmMode;
use agents_core::redact::RedactionKeys;
use agents_core::{Limits, RoleMap};
use std::time::Duration;

/// What to do when the administrator's disable list cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DisabledFallback {
    /// Use the role-only set (the disable list is a convenience, not a boundary); audited.
    #[default]
    RoleOnly,
    /// Offer no tools; audited.
    FailClosed,
}

/// A runtime's settings.
pub(in crate::run) struct Settings {
    pub(in crate::run) roles: RoleMap,
    pub(in crate::run) disabled_fallback: DisabledFallback,
    pub(in crate::run) budget_fallback: BudgetFallback,
    pub(in crate::run) confirm_mode: ConfirmMode,
    pub(in crate::run) redaction: RedactionKeys,
    /// What the records keep of a call's values.
    pub(in crate::run) values: agents_core::audit::AuditValues,
    pub(in crate::run) limits: Option<Limits>,
    /// The limit on a whole run tree's spend.
    pub(in crate::run) tree_limit: Option<super::super::limit::TreeLimit>,
    pub(in crate::run) system_prompt: String,
    /// What happens to a proposal fed by content the user did not write.
    pub(in crate::run) untrusted: crate::untrusted::UntrustedPolicies,
    /// This runtime's name in the store's execution claims.
    pub(in crate::run) node_id: String,
    /// How often a call waiting for a decision looks in the store for one made elsewhere.
    pub(in crate::run) decision_poll: Duration,
    /// The lease of a run's slot in the store.
    pub(in crate::run) slot_lease: Duration,
    /// How long one tool call may run before it is ended.
    pub(in crate::run) tool_timeout: Duration,
    /// The largest result (bytes of compact JSON) handed on whole.
    pub(in crate::run) max_result_bytes: usize,
    /// The largest part of one tool result (bytes of its compact JSON text) the model reads.
    pub(in crate::run) max_model_result_bytes: usize,
    /// Tool calls of one model answer that run; the rest are refused.
    pub(in crate::run) max_tool_calls_per_answer: usize,
    /// A session unused for this long starts afresh, and is purged.
    pub(in crate::run) session_idle_timeout: Duration,
    /// The most sessions this node holds (beyond those with a model run under way).
    pub(in crate::run) max_sessions: usize,
    /// How often the runtime's own timer sweeps expired tokens and idle sessions.
    pub(in crate::run) sweep_every: Option<Duration>,
    /// How long proposals that are over stay in the state store.
    pub(in crate::run) proposal_retention: Duration,
    /// How long a claim of a proposal's final record may stay unwritten before a resumption
    /// takes it over.
    pub(in crate::run) settle_lease: Duration,
    /// Bytes of text of replayed history.
    pub(in crate::run) history_bytes: usize,
    /// The fractions of a budget cap whose crossing is reported (each in (0, 1]).
    pub(in crate::run) budget_thresholds: Vec<f64>,
}
