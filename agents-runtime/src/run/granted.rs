//! An agent granted to another (`agent! { agents: [...] }`), as the run of the granting agent
//! offers it to its model and calls it: [`GrantedAgent`], the entry `agent!` writes per granted
//! agent (its name, what it is for, its input's schema and how to run it), and
//! [`GrantedCall`], what a call of it takes of the calling run.
//!
//! A call runs the granted agent as a child node of the calling run (`run/child.rs`, the
//! start every node of a run tree uses): for the same principal, in the same session, under the
//! caller's stop, within the same tree allowance, its records carrying the caller's run id
//! and the path `caller/callee`, its events reaching the caller's subscribers as
//! [`Event::Node`](crate::Event::Node). Its own tools pass its own gate: an action waits for
//! the person's decision as any action does.

use super::limit::NodeScope;
use super::shared::Inner;
use crate::BoxFuture;
use crate::events::EventBus;
use agents_core::Principal;
use serde_json::Value;
use std::sync::Arc;

/// How a granted agent is run: its input (the call's arguments, strictly parsed) to its final
/// answer (as JSON), or why it gave none.
pub(in crate::run) type RunGranted = fn(GrantedCall, Value) -> BoxFuture<'static, Result<Value, String>>;

/// An agent granted to another, as `agent!` writes it in the granting agent's registry
/// ([`Registry::agent_at`](crate::tool::Registry::agent_at)). Made only by the runtime's
/// generated-code path, from the granted agent's own type.
pub struct GrantedAgent {
    /// The granted agent's name.
    pub(crate) name: &'static str,
    /// Its `MANIFEST_SHA256`.
    pub(crate) sha256: &'static str,
    /// What it is for (the model reads it as the tool's description).
    pub(crate) description: &'static str,
    /// Its `CAPABILITIES`: what it reaches, merged into the granting agent's own summary
    /// (checked by [`verify_registry`](crate::tool::verify_registry)).
    pub(crate) capabilities: agents_core::compose::Capabilities,
    /// Its own registry check (`verify_registry`, remembered per type): the summary merged
    /// into the granting agent's is only as good as the callee's own. Why it is refused, if so.
    pub(crate) verify: fn() -> Result<(), String>,
    /// The JSON Schema of its input type.
    pub(crate) schema: fn() -> Value,
    /// How a call runs it.
    pub(in crate::run) run: RunGranted,
}

impl std::fmt::Debug for GrantedAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantedAgent").field("name", &self.name).finish_non_exhaustive()
    }
}

impl GrantedAgent {
    /// The granted agent's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What it reaches (its `CAPABILITIES`).
    pub fn capabilities(&self) -> &agents_core::compose::Capabilities {
        &self.capabilities
    }

    /// The name the model calls it by ([`agents_core::subagent::tool_name`]).
    pub fn tool_name(&self) -> String {
        agents_core::subagent::tool_name(self.name)
    }

    /// The JSON Schema of its input: what the model fills.
    pub fn input_schema(&self) -> Value {
        (self.schema)()
    }
}

/// What a call of a granted agent takes of the calling run.
pub(in crate::run) struct GrantedCall {
    pub(in crate::run) inner: Arc<Inner>,
    pub(in crate::run) principal: Principal,
    pub(in crate::run) session_id: String,
    /// The child's place: the caller's stop (a child token), its node (the caller's run id and
    /// `caller/callee`) and the tree's allowance.
    pub(in crate::run) scope: NodeScope,
    /// The caller's events, where the child's arrive wrapped in `Event::Node`.
    pub(in crate::run) bus: Arc<EventBus>,
    /// The caller's run id, which the wrapped events carry.
    pub(in crate::run) run_id: String,
}
