//! What an agent's manifest declares of its audit records' values (`audit: { values: ... }`
//! in its `agent!`, `agent.audit_values` in its manifest), held against the runtime's setting
//! ([`RuntimeBuilder::audit_values`](crate::run::RuntimeBuilder::audit_values)) when a run or
//! a direct session starts: a runtime may keep as much of a call's values as the agent
//! declares or less, never more. The rule is `AuditValues::admits`, the one the manifest diff
//! is held against.

use agents_core::AgentSpec;
use agents_core::audit::AuditValues;

/// A run refused because the runtime keeps more of a call's values than the agent's manifest
/// declares. Nothing ran and nothing was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndeclaredAuditValues {
    /// The agent's name.
    pub agent: &'static str,
    /// What the runtime is set to keep.
    pub used: AuditValues,
    /// What the agent declares.
    pub declared: AuditValues,
}

impl std::fmt::Display for UndeclaredAuditValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let UndeclaredAuditValues { agent, used, declared } = self;
        write!(
            f,
            "the runtime keeps `{used}` audit values, but agent `{agent}` declares `{declared}`: declare `audit: {{ values: {used} }}` in agent! of `{agent}` (a widening reviewers see in the manifest), or set the runtime's `audit_values` to `{declared}`"
        )
    }
}

impl std::error::Error for UndeclaredAuditValues {}

/// Refuses a runtime setting wider than the one `spec` declares.
///
/// ```
/// use agents_runtime::agents_core::audit::AuditValues;
/// use agents_runtime::audit::declared::check_values;
/// # let spec = agents_runtime::agents_core::AgentSpec {
/// #     name: "desk", description: "", input: "String", output: "String", skills: &[],
/// #     ceiling: None, limits: agents_runtime::agents_core::Limits::DEFAULT, models: None,
/// #     budget: Default::default(), audit_values: AuditValues::Masked,
/// #     unskilled: Default::default(), knowledge: &[], expose_mcp: &[],
/// # };
/// // `spec` declares `audit: { values: masked }`.
/// assert!(check_values(&spec, AuditValues::Omitted).is_ok());
/// assert!(check_values(&spec, AuditValues::Masked).is_ok());
/// let refused = check_values(&spec, AuditValues::Full).unwrap_err();
/// assert!(refused.to_string().contains("declare `audit: { values: full }` in agent!"));
/// ```
pub fn check_values(spec: &AgentSpec, used: AuditValues) -> Result<(), UndeclaredAuditValues> {
    if spec.audit_values.admits(used) {
        return Ok(());
    }
    Err(UndeclaredAuditValues { agent: spec.name, used, declared: spec.audit_values })
}
