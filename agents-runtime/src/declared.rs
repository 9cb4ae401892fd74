//! What an agent's manifest declares beyond its tools, held against what a run uses: the
//! provider (its kind, model and host must be one of the agent's `models`, checked when a run
//! starts and before every model call) and the budget caps per run (checked before every model
//! call). The rules themselves are `agents_core::models` and `agents_core::budget`, the same the
//! manifest's readers use.

use crate::provider::Provider;
use agents_core::budget::{BudgetEntry, RunSpend};
use agents_core::models::{ModelEntry, ProviderIdentity, admits, declaration_for};
use agents_core::{Agent, AgentSpec};

/// A run refused because the agent's manifest does not name its provider: the provider's
/// kind, model or host is not among the agent's `models`. Nothing ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndeclaredModel {
    /// The agent's name.
    pub agent: &'static str,
    /// The provider as it describes itself (`kind:model@host`).
    pub provider: String,
    /// The declared models, as shown.
    pub declared: String,
    /// The declaration that would admit the provider; `None` when the provider's name is no
    /// kind `agent!` knows, so no declaration would.
    pub declaration: Option<String>,
}

impl std::fmt::Display for UndeclaredModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let UndeclaredModel { agent, provider, declared, declaration } = self;
        write!(f, "agent `{agent}` may not run on {provider}: its manifest declares the models {declared}; ")?;
        match declaration {
            Some(d) => write!(
                f,
                "declare `{d}` in `models: [...]` of its `agent!` (a widening reviewers see in the manifest), or configure one of the declared models"
            ),
            None => f.write_str(
                "no declaration admits a provider of that name (`agent!` knows `openai`, `anthropic`, `openai-compatible`, and `offline` for providers without a host): configure one of the declared models",
            ),
        }
    }
}

impl std::error::Error for UndeclaredModel {}

/// Refuses a provider the agent's declared models do not admit; an agent that declares none
/// admits any.
pub fn check_provider<A: Agent>(provider: &dyn Provider) -> Result<(), UndeclaredModel> {
    check_spec(&A::SPEC, provider)
}

/// [`check_provider`] for an agent's spec.
pub fn check_spec(spec: &AgentSpec, provider: &dyn Provider) -> Result<(), UndeclaredModel> {
    let Some(models) = spec.models else { return Ok(()) };
    let host = provider.host();
    let used = ProviderIdentity { provider: provider.name(), model: provider.model(), host: host.as_deref() };
    let declared: Vec<ModelEntry> = models.iter().map(ModelEntry::from_spec).collect();
    if admits(&declared, &used) {
        return Ok(());
    }
    Err(UndeclaredModel {
        agent: spec.name,
        provider: format!("`{used}`"),
        declared: declared.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "),
        declaration: declaration_for(&used),
    })
}

/// Before a model call: why the call may not be made, when the provider is not declared or a
/// budget cap per run is reached; `None` when it may.
pub fn before_model_call(spec: &AgentSpec, provider: &dyn Provider, spent: RunSpend) -> Option<String> {
    if let Err(e) = check_spec(spec, provider) {
        return Some(e.to_string());
    }
    BudgetEntry::from(spec.budget).exceeded(&spent)
}
