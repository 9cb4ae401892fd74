//! The KYC review as several agents in one graph: an intake that checks the request, the
//! reviewer, then a branch that records a clear decision (an action a person confirms) and
//! sends anything else to an analyst; and a panel of two reviewers with a moderator. Each composite's graph manifest is
//! a const, committed as a baseline (`baselines/*.composite.json`) and checked like the
//! agents' manifests.

use super::tools::{read_customer_file, record_kyc_decision};
use super::{ApprovalDecision, DecisionKind, KycReviewer, RawRequest, perms};
use agents_runtime::agents_core::compose::Route;
use agents_runtime::{agent, composite, tool};

agent! {
    /// Checks that a KYC request is complete and that each listed document can be read;
    /// returns the request unchanged for the reviewer.
    pub struct KycIntake;
    name: "kyc-intake",
    input: RawRequest,
    output: RawRequest,
    tools: [read_customer_file],
    ceiling: [perms::kyc::review],
}

agent! {
    /// Records a clear decision as the reviewer gave it, with `record_kyc_decision`: an
    /// action, so the decision is recorded only once a person has seen its card (the request,
    /// the decision and the risk score) and said yes. Returns the decision.
    pub struct KycDecision;
    name: "kyc-decision",
    input: ApprovalDecision,
    output: ApprovalDecision,
    tools: [record_kyc_decision],
    ceiling: [perms::kyc::decide],
}

/// Refers a KYC case to an analyst's queue; a person decides it.
///
/// # Arguments
///
/// * `request_id` - the request referred
/// * `reason` - why a person must look
#[tool(permission = perms::kyc::review, handoff, title = "Refer to an analyst", risk = low)]
pub async fn refer_to_analyst(request_id: String, reason: String) -> Result<String, String>;

agent! {
    /// Refers a decision that is not clear to an analyst, and returns it marked `refer`.
    pub struct KycHumanReview;
    name: "kyc-human-review",
    input: ApprovalDecision,
    output: ApprovalDecision,
    tools: [refer_to_analyst],
    ceiling: [perms::kyc::review],
}

/// The highest risk score a decision may have and stand without a person.
pub const CLEAR_RISK: u8 = 30;

/// Sends an approval or a rejection with a low risk score to [`KycDecision`], which records it
/// once a person confirms; anything else (a referral, a higher score) takes the default arm,
/// the human review.
///
/// The router reads the reviewer's answer, which is a model's: a customer file that talks the
/// reviewer into "approve, risk 0" chooses this arm. That is why the arm acts only through an
/// action the person confirms: the file can choose the arm, not make its decision stand.
#[derive(Debug)]
pub struct ByRisk;

impl Route<ApprovalDecision> for ByRisk {
    fn route(decision: &ApprovalDecision) -> Option<&'static str> {
        let clear = decision.decision != DecisionKind::Refer && decision.risk_score <= CLEAR_RISK;
        clear.then_some("kyc-decision")
    }
}

composite! {
    /// A KYC request checked at intake, reviewed against its documents, then decided: a clear
    /// decision is recorded once a person confirms it, anything else goes to an analyst.
    pub struct KycPipeline: RawRequest -> ApprovalDecision =
        then(KycIntake, KycReviewer, branch(ByRisk, [KycDecision], default = KycHumanReview));
}

agent! {
    /// Reviews a KYC request as a second, independent reviewer.
    pub struct KycSecondReviewer;
    name: "kyc-second-reviewer",
    input: RawRequest,
    output: ApprovalDecision,
    tools: [read_customer_file],
    ceiling: [perms::kyc::review],
}

agent! {
    /// Decides between two reviewers' decisions on one request: agreement stands, a
    /// disagreement becomes a referral.
    pub struct KycModerator;
    name: "kyc-moderator",
    input: Vec<ApprovalDecision>,
    output: ApprovalDecision,
    tools: [],
}

composite! {
    /// Two reviewers decide the same request, a moderator settles it, in two rounds at most.
    pub struct KycPanel: RawRequest -> ApprovalDecision =
        forum([KycReviewer, KycSecondReviewer], moderator = KycModerator, rounds = 2);
}
