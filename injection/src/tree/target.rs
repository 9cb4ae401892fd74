//! The run trees the suite runs (composites, an agent granted another as a tool, and an agent
//! that hands its run to another), and where their goals are.

use crate::scenario::{Goal, LoadError, default_dir, load_goals};

/// A composite the suite runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeTarget {
    /// The helpdesk's triage and specialists.
    HelpdeskTriage,
    /// The KYC pipeline: intake, reviewer, a branch by risk to a decision or a person.
    KycPipeline,
    /// The KYC panel: two reviewers and a moderator.
    KycPanel,
    /// The KYC supervisor, which runs the second reviewer as a tool (a granted agent).
    KycSupervisor,
    /// The helpdesk's IT specialist, which hands a leave question to the HR specialist (a
    /// handoff tool that names its target).
    HelpdeskHandoff,
}

impl TreeTarget {
    /// Every composite target.
    pub const ALL: [TreeTarget; 5] = [
        TreeTarget::HelpdeskTriage,
        TreeTarget::KycPipeline,
        TreeTarget::KycPanel,
        TreeTarget::KycSupervisor,
        TreeTarget::HelpdeskHandoff,
    ];

    /// The name in the table, and the directory of its goals.
    pub fn name(self) -> &'static str {
        match self {
            TreeTarget::HelpdeskTriage => "helpdesk-triage",
            TreeTarget::KycPipeline => "kyc-pipeline",
            TreeTarget::KycPanel => "kyc-panel",
            TreeTarget::KycSupervisor => "kyc-supervisor",
            TreeTarget::HelpdeskHandoff => "helpdesk-handoff",
        }
    }

    /// The target's goals, from `examples/scenarios/trees/<name>/goals/`.
    pub fn goals(self) -> Result<Vec<Goal>, LoadError> {
        load_goals(&default_dir().join("trees").join(self.name()))
    }
}
