//! A runtime's services: what it records, asks, keeps and calls through (the audit sink, the
//! model provider, the state store and the token store on it, the classifier, interceptors,
//! budgets, the dialog's confirmer, isolation, imported tools, the application's state).

use crate::BoxFuture;
use crate::audit::AuditSink;
use crate::budget::BudgetStore;
use crate::classifier::ConfirmationClassifier;
use crate::interceptor::Interceptor;
use crate::provider::Provider;
use crate::run::decision::Confirmer;
use crate::store::Store;
use crate::token::TokenStore;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The tools an administrator switched off. It can only remove capability.
pub trait DisabledTools: Send + Sync {
    /// The disabled tool names.
    fn disabled(&self) -> BoxFuture<'_, Result<BTreeSet<String>, String>>;
}

impl DisabledTools for BTreeSet<String> {
    fn disabled(&self) -> BoxFuture<'_, Result<BTreeSet<String>, String>> {
        let s = self.clone();
        Box::pin(async move { Ok(s) })
    }
}

/// A runtime's services.
pub(in crate::run) struct Services {
    pub(in crate::run) audit: Arc<dyn AuditSink>,
    pub(in crate::run) provider: Arc<dyn Provider>,
    pub(in crate::run) disabled: Option<Arc<dyn DisabledTools>>,
    pub(in crate::run) interceptors: Vec<Arc<dyn Interceptor>>,
    pub(in crate::run) budget: Option<Arc<dyn BudgetStore>>,
    pub(in crate::run) classifier: Arc<dyn ConfirmationClassifier>,
    pub(in crate::run) tokens: TokenStore,
    /// Where tokens and run slots are kept (shared with other nodes when it is a shared store).
    pub(in crate::run) store: Arc<dyn Store>,
    /// Asks a person for the actions of model runs (dialog mode), beside [`Runtime::decide`](crate::run::Runtime::decide).
    pub(in crate::run) confirmer: Option<Arc<dyn Confirmer>>,
    /// The runtime's own isolation settings, workers and added isolated tools.
    pub(crate) isolation: Option<crate::isolate::Isolation>,
    /// The MCP servers imported tools are called on.
    pub(in crate::run) mcp_imports: Option<Arc<dyn crate::imported::ImportedTools>>,
    /// The application's state, reachable from every tool's context.
    pub(in crate::run) state: crate::tool::AppState,
    /// Where who a run acts for is read again before each call, decision and resumption;
    /// `None`: a run holds the principal it started with (see [`crate::authority`]).
    pub(in crate::run) principals: Option<Arc<dyn crate::authority::PrincipalSource>>,
    /// The agents' knowledge: its settings and the sources loaded so far.
    #[cfg(feature = "knowledge")]
    pub(in crate::run) knowledge: crate::knowledge::Knowledge,
}
