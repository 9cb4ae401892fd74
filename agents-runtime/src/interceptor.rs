//! Interceptors: human-oversight and policy hooks that see every call after the strict parse
//! and before the tier. Each decision is audited; a deny is a `denied` record.

use crate::BoxFuture;
use agents_core::{Principal, ToolSpec};
use serde_json::Value;

/// What an interceptor decides about one call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Decision {
    /// Go on.
    Proceed,
    /// Go on with these arguments instead (they are parsed strictly again).
    ProceedWith(Value),
    /// Refuse; the reason goes back to the model and into the audit record.
    Deny(String),
    /// Answer in place of the tool; the tool does not run.
    Substitute(Value),
}

/// What an interceptor sees.
#[derive(Debug, Clone, Copy)]
pub struct Interception<'a> {
    /// The user the run acts for.
    pub principal: &'a Principal,
    /// The tool's spec (policy included).
    pub spec: &'static ToolSpec,
    /// The arguments, after the strict parse.
    pub args: &'a Value,
    /// The run.
    pub run_id: &'a str,
    /// For a tool that reaches the outside world (a declared host, or `#[tool(egress)]`) and
    /// for an action: where each argument value came from, as the gate's provenance check
    /// found it (see [`crate::provenance`]). `None` for other tools.
    pub provenance: Option<&'a crate::provenance::Provenance>,
}

/// A hook before every tool call.
///
/// ```
/// use agents_runtime::interceptor::{Decision, Interception, Interceptor};
/// use agents_runtime::BoxFuture;
///
/// /// Refuses paths outside the tool's declared write globs.
/// struct WritePolicy;
/// impl Interceptor for WritePolicy {
///     fn before_call<'a>(&'a self, call: Interception<'a>) -> BoxFuture<'a, Decision> {
///         Box::pin(async move {
///             match call.args.get("path").and_then(|p| p.as_str()) {
///                 Some(p) if !call.spec.policy.fs_write.iter().any(|g| g.trim_end_matches("**") == &p[..p.len().min(g.len() - 2)]) =>
///                     Decision::Deny(format!("path `{p}` is outside the declared write policy")),
///                 _ => Decision::Proceed,
///             }
///         })
///     }
/// }
/// ```
pub trait Interceptor: Send + Sync {
    /// Decides about one call.
    fn before_call<'a>(&'a self, call: Interception<'a>) -> BoxFuture<'a, Decision>;
}

impl<F> Interceptor for F
where
    F: for<'a> Fn(Interception<'a>) -> Decision + Send + Sync,
{
    fn before_call<'a>(&'a self, call: Interception<'a>) -> BoxFuture<'a, Decision> {
        let d = self(call);
        Box::pin(async move { d })
    }
}
