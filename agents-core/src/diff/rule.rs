//! The rules that classify a change: one table, each rule's name beside it, so the
//! serialized name and [`Rule::as_str`] cannot disagree.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Declares [`Rule`] from its table: each variant with its documentation and its snake_case
/// name, which both serde and [`Rule::as_str`] use.
macro_rules! rules {
    ($($(#[doc = $doc:literal])* $variant:ident => $name:literal,)*) => {
        /// The rule that classified a change. Serialized in snake_case.
        ///
        /// Non-exhaustive: every new field of the manifest brings its rules.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum Rule {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant,)*
        }

        impl Rule {
            /// Every rule, in the table's order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            /// The snake_case name (as serialized).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Rule::$variant => $name,)*
                }
            }
        }
    };
}

rules! {
    /// A tool was granted.
    ToolAdded => "tool_added",
    /// A tool is no longer granted.
    ToolRemoved => "tool_removed",
    /// A tool's permission changed.
    PermissionChanged => "permission_changed",
    /// A tool is no longer `mutating`: its calls no longer wait for a person.
    MutatingRemoved => "mutating_removed",
    /// A tool became `mutating`.
    MutatingAdded => "mutating_added",
    /// A tool is no longer `isolated`: its policy binds only cooperating code.
    IsolationRemoved => "isolation_removed",
    /// A tool became `isolated`: the kernel enforces its policy in a confined process.
    IsolationAdded => "isolation_added",
    /// A tool is no longer marked `egress`: values copied from tool results into its
    /// arguments no longer wait for a person (unless it declares a host).
    EgressRemoved => "egress_removed",
    /// A tool became `egress`: its calls' arguments are checked for where they came from.
    EgressAdded => "egress_added",
    /// A tool's tier moved towards `read` (handoff → action → read).
    TierLowered => "tier_lowered",
    /// A tool's tier moved towards `handoff`.
    TierRaised => "tier_raised",
    /// A tool's declared risk went down.
    RiskLowered => "risk_lowered",
    /// A tool's declared risk went up.
    RiskRaised => "risk_raised",
    /// A policy entry (glob, host, variable) was added that no old entry covers.
    PolicyAdded => "policy_added",
    /// A policy entry was replaced by a broader one.
    PolicyBroadened => "policy_broadened",
    /// A policy entry was removed and nothing new covers it.
    PolicyRemoved => "policy_removed",
    /// A policy entry was replaced by a narrower one.
    PolicyNarrowed => "policy_narrowed",
    /// A policy entry was added or removed, but what it covers was and is covered.
    PolicyCovered => "policy_covered",
    /// A parameter stopped being secret (`#[secret]` removed, or its type no longer names
    /// `Secret`): its values will appear unmasked.
    SecretRemoved => "secret_removed",
    /// A parameter became secret.
    SecretAdded => "secret_added",
    /// A parameter was added: the model controls a new input.
    ParameterAdded => "parameter_added",
    /// A parameter was removed.
    ParameterRemoved => "parameter_removed",
    /// A parameter's type changed: a widening, since the manifest holds only the type's name
    /// and so cannot show that the new type admits no new values.
    ParameterTypeChanged => "parameter_type_changed",
    /// The parameters were reordered.
    ParametersReordered => "parameters_reordered",
    /// A tool now invokes another tool.
    UsesAdded => "uses_added",
    /// A tool no longer invokes another tool.
    UsesRemoved => "uses_removed",
    /// A tool's confirm-dialog title changed.
    TitleChanged => "title_changed",
    /// A tool's description changed.
    DescriptionChanged => "description_changed",
    /// The agent's permission ceiling was removed.
    CeilingRemoved => "ceiling_removed",
    /// The agent gained a permission ceiling.
    CeilingAdded => "ceiling_added",
    /// A permission was added to the ceiling.
    CeilingRaised => "ceiling_raised",
    /// A permission was removed from the ceiling.
    CeilingLowered => "ceiling_lowered",
    /// A default limit went up.
    LimitRaised => "limit_raised",
    /// A default limit went down.
    LimitLowered => "limit_lowered",
    /// A skill was added, removed or regrouped.
    SkillsChanged => "skills_changed",
    /// The agent's name changed.
    AgentRenamed => "agent_renamed",
    /// The agent's description changed.
    AgentDescriptionChanged => "agent_description_changed",
    /// The agent's input or output type changed.
    IoTypeChanged => "io_type_changed",
    /// An imported tool's pin, server or name on its server changed (or a tool became or
    /// stopped being imported): the text the model reads and the schema it fills come from
    /// elsewhere now.
    ImportChanged => "import_changed",
    /// The agent's declared models were removed: it may run on any provider.
    ModelsAny => "models_any",
    /// The agent declared its models, where any provider was allowed.
    ModelsDeclared => "models_declared",
    /// A model was added to the declared ones (or one admits more hosts).
    ModelAdded => "model_added",
    /// A model was removed from the declared ones (or one admits fewer hosts).
    ModelRemoved => "model_removed",
    /// A model was added or removed, but what it admits was and is admitted.
    ModelCovered => "model_covered",
    /// A budget cap per run was removed.
    BudgetCapRemoved => "budget_cap_removed",
    /// A budget cap per run was declared.
    BudgetCapDeclared => "budget_cap_declared",
    /// A budget cap per run went up.
    BudgetCapRaised => "budget_cap_raised",
    /// A budget cap per run went down.
    BudgetCapLowered => "budget_cap_lowered",
    /// A skill offers an action tool it did not offer: a new skill reaching an action, an
    /// action tool moved into a skill, or one shared with every skill by `unskilled: shared`.
    SkillReachesAction => "skill_reaches_action",
    /// The agent's `unskilled` changed: `none` → `shared` (neutral: the actions it shares are
    /// each a [`Rule::SkillReachesAction`]), `shared` → `none` (narrowing).
    UnskilledChanged => "unskilled_changed",
    /// A knowledge source was declared: new text reaches the model.
    KnowledgeAdded => "knowledge_added",
    /// A knowledge source was removed.
    KnowledgeRemoved => "knowledge_removed",
    /// A knowledge source's contents changed (its SHA-256): text a reviewer has not read
    /// reaches the model.
    KnowledgeChanged => "knowledge_changed",
    /// A knowledge source's path changed, its contents (SHA-256) the same.
    KnowledgeMoved => "knowledge_moved",
    /// The audit records may keep more of a call's values (omitted → masked → full).
    AuditValuesWidened => "audit_values_widened",
    /// The audit records keep less of a call's values.
    AuditValuesNarrowed => "audit_values_narrowed",
    /// A composite gained a node (a wrap is [`Rule::GuardAdded`]).
    NodeAdded => "node_added",
    /// A composite lost a node (a wrap is [`Rule::GuardRemoved`]).
    NodeRemoved => "node_removed",
    /// A composite gained an edge: widening when a run entering its target may reach an
    /// action or a handoff.
    EdgeAdded => "edge_added",
    /// A composite lost an edge.
    EdgeRemoved => "edge_removed",
    /// An agent node's manifest SHA-256 changed and its manifests were not given, so what
    /// changed was not inspected.
    NodeManifestChanged => "node_manifest_changed",
    /// A composite (or one of its agent nodes) gained a tool, action, handoff or permission.
    CapabilityAdded => "capability_added",
    /// A composite (or one of its agent nodes) lost a tool, action, handoff or permission.
    CapabilityRemoved => "capability_removed",
    /// A wrap node, or one of its steps, was removed: a guard no longer runs.
    GuardRemoved => "guard_removed",
    /// A wrap node, or a step of one, was added.
    GuardAdded => "guard_added",
    /// A branch's router changed: code → model (widening: text the model read may choose the
    /// arm) or model → code.
    RouterChanged => "router_changed",
    /// A parallel's failure policy changed: fail_fast → collect (widening: the other members
    /// run on after one fails) or collect → fail_fast.
    FailurePolicyChanged => "failure_policy_changed",
    /// A parallel's join changed.
    JoinChanged => "join_changed",
    /// Tools are imported from an MCP server the old manifest did not name.
    McpServerAdded => "mcp_server_added",
    /// No tool is imported from an MCP server any more.
    McpServerRemoved => "mcp_server_removed",
    /// An MCP server is reached at another endpoint (another program, host, scheme or path).
    McpEndpointChanged => "mcp_endpoint_changed",
    /// The agent may be served over MCP in a way it could not (a transport, or HTTP behind
    /// another kind of authentication).
    McpExposureAdded => "mcp_exposure_added",
    /// The agent is no longer served over MCP in a way it was.
    McpExposureRemoved => "mcp_exposure_removed",
    /// A composite's run starts at another node.
    EntryChanged => "entry_changed",
    /// The agent's input schema may accept a value the old one refused (a new property, a
    /// widened type, a property no longer required, a relaxed enum or bound, or a change not
    /// shown to accept nothing more).
    InputSchemaWidened => "input_schema_widened",
    /// The agent's input schema accepts only values the old one accepted, and not all of them.
    InputSchemaNarrowed => "input_schema_narrowed",
    /// The agent's input schema changed but accepts the same values (its annotations, or an
    /// equivalent form).
    InputSchemaChanged => "input_schema_changed",
    /// The agent's output schema changed: the application receives values of another shape.
    OutputSchemaChanged => "output_schema_changed",
    /// One document holds the input and output schemas and the other does not (a plain
    /// manifest): what the agent accepts is not shown on both sides.
    SchemasNotCompared => "schemas_not_compared",
    /// An agent was granted to the agent (`agents`): the model may run it as a tool.
    AgentGranted => "agent_granted",
    /// An agent is no longer granted.
    AgentUngranted => "agent_ungranted",
    /// A granted agent's manifest SHA-256 changed: what changed inside it is reviewed in its
    /// own manifest's diff.
    GrantedAgentChanged => "granted_agent_changed",
    /// A handoff tool now names the agent it hands the run to.
    HandoffTargetAdded => "handoff_target_added",
    /// The agent a handoff tool hands the run to is another, or its manifest SHA-256 changed.
    HandoffTargetChanged => "handoff_target_changed",
    /// A handoff tool no longer names an agent: a call only files a record.
    HandoffTargetRemoved => "handoff_target_removed",
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Rule;

    #[test]
    fn each_name_is_the_serialized_name_and_snake_case_and_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for rule in Rule::ALL {
            assert_eq!(serde_json::to_value(rule).unwrap(), rule.as_str());
            assert_eq!(serde_json::from_value::<Rule>(rule.as_str().into()).unwrap(), *rule);
            assert!(rule.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{rule:?}");
            assert!(seen.insert(rule.as_str()), "{} twice", rule.as_str());
        }
    }
}
