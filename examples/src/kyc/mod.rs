//! `kyc-reviewer`: a know-your-customer reviewer with a typed input and output, a skill, and
//! a filesystem policy enforced at each level the project offers.
//!
//! What it shows:
//!
//! - **A rulebook it consults.** `src/kyc/rulebook.md` is compiled in and pinned by SHA-256
//!   in the manifest; for each request the runtime gives the model the rulebook's passages
//!   that match it, as data (see [`agents_runtime::knowledge`]).
//! - **Typed contract.** The agent takes a [`RawRequest`] and returns an [`ApprovalDecision`]:
//!   its JSON schema is generated from the type and sent to the model, and the model's final
//!   answer is parsed into the type and validated ([`ApprovalDecision`]'s rules: a risk score
//!   of at most 100, at least one reason, an approval only after a document was read). An
//!   answer that does not fit ends the run as failed, with the reason in the audit log; the
//!   application never receives an unchecked decision.
//! - **What a tool may touch.** [`tools::read_customer_file`], grouped under the `review`
//!   skill, declares `fs(read = ["/tmp/agents-kyc/uploads/**"])`, nothing else: no write, no
//!   network, no environment, risk medium. The same declaration holds at each level, side by
//!   side in the demo:
//!   1. *declared*: the manifest and its baseline (`examples/baselines/kyc.manifest.json`),
//!      reviewed and diffed;
//!   2. *at the gate*: [`app::DeclaredPathCheck`], the seed's `onBeforeToolCall` hook, refuses
//!      a `path` argument outside the declared read globs before the tool runs (a `denied`
//!      record naming the path and the policy);
//!   3. *in process*: the [`FsAccess`](agents_runtime::FsAccess) handle the runtime gives the
//!      tool refuses `../../etc/passwd`, a symlink that leads out of the uploads directory,
//!      and a write (each a `failed` record whose reason names the path and the policy).
//!      This binds cooperating tool code: a body that calls `std::fs` directly is not
//!      stopped at this level;
//!   4. *out of process*: [`vendor::vendor_extract_text`], declared the same way but with a
//!      body that calls `std::fs` directly, runs `isolated`: in a worker process the kernel
//!      confines to the declaration (Landlock, seccomp, namespaces), which refuses the climb
//!      out, the symlink and the write (`Permission denied`, a `failed` record naming the
//!      path after a `notice` saying how the worker was confined). The program's `main`
//!      calls [`agents_runtime::isolate::init`] first, so it can serve as that worker.
//! - **A typed skill.** Beside `review` (the agent's own input and output), the skill
//!   `check_document` takes a [`DocumentRef`] and returns a [`DocumentCheck`], and offers
//!   only [`tools::read_customer_file`]. The application starts it with
//!   `runtime.start_skill::<KycReviewerCheckDocumentSkill>(principal, session, document)`: the
//!   handle yields a `DocumentCheck`, and a run started with a `RawRequest` does not compile.
//!   The model never chooses it (its input is not the agent's); the manifest names its types.
//! - **A budget on tool calls.** [`app::ToolCallBudget`] allows six tool calls per run; the
//!   seventh is refused and audited (`denied`, "budget exceeded: maxToolCalls").
//!
//! # Where the uploads live
//!
//! [`UPLOADS_ROOT`] is the one place the deployment's uploads directory is named; the
//! tool's glob is `UPLOADS_ROOT/**` (a test holds the two together). Globs are literals of
//! the declaration, so the root is part of the manifest and its hash: a deployment that
//! keeps uploads elsewhere changes this constant and the glob, and the baseline diff shows
//! the reviewer the new root. The demo creates a fresh directory beneath the root for each
//! run and writes its customer files there.

pub mod app;
pub mod pipeline;
pub mod supervisor;
pub mod tools;
pub mod vendor;

pub use app::main_with;

use agents_runtime::{RoleMap, agent, permissions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::LazyLock;
use tools::*;

/// The directory beneath which customer uploads live: the root of
/// [`tools::read_customer_file`]'s read glob.
pub const UPLOADS_ROOT: &str = "/tmp/agents-kyc/uploads";
/// The directory beneath which review notes are written: the root of
/// [`tools::save_review_note`]'s write glob.
pub const NOTES_ROOT: &str = "/tmp/agents-kyc/notes";

permissions! {
    /// The KYC team's permissions.
    pub mod perms {
        kyc.review,
        kyc.annotate,
        kyc.decide,
    }
}

/// The KYC analyst role's name.
pub const ANALYST: &str = "kyc_analyst";

/// The KYC application's role map.
pub fn roles() -> &'static RoleMap {
    static ROLES: LazyLock<RoleMap> = LazyLock::new(|| {
        use perms::*;
        RoleMap::new().role(ANALYST, [kyc::review::NAME, kyc::annotate::NAME, kyc::decide::NAME])
    });
    &ROLES
}

/// A KYC request as it arrives from the onboarding form: who the customer says they are and
/// which uploaded documents support it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRequest {
    /// The request's id, echoed in the decision.
    pub request_id: String,
    /// The customer's id in the onboarding system.
    pub customer_id: String,
    /// The name the customer gave.
    pub full_name: String,
    /// The country of residence the customer gave (ISO 3166-1 alpha-2).
    pub country: String,
    /// Absolute paths of the uploaded documents, beneath the uploads directory.
    pub documents: Vec<String>,
}

/// One uploaded document to check on its own: the input of the reviewer's typed skill
/// `check_document`, which the application starts with
/// `start_skill::<KycReviewerCheckDocumentSkill>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentRef {
    /// Absolute path of the upload, beneath the uploads directory.
    pub path: String,
}

/// What a document check found: the output of the skill `check_document`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentCheck {
    /// The path checked, as given.
    pub path: String,
    /// Whether the document could be read.
    pub readable: bool,
    /// What kind of document it appears to be (e.g. `passport`), or `unknown`.
    pub kind: String,
}

/// What the reviewer decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// The documents support the request.
    Approve,
    /// The documents contradict the request.
    Reject,
    /// A person must look: something is missing, unreadable or out of reach.
    Refer,
}

/// The most a risk score may be.
pub const MAX_RISK_SCORE: u8 = 100;

/// The reviewer's decision, as the application receives it.
///
/// Validated when it is parsed, so a value of this type always satisfies: `risk_score` is at
/// most [`MAX_RISK_SCORE`]; `reasons` holds at least one non-blank reason; an `approve` names
/// at least one document in `documents_reviewed`. No other field is accepted. The runtime
/// parses the model's final answer with this type's `Deserialize`, so an answer that breaks a
/// rule never reaches the application: the run fails and the audit log says why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "DecisionFields")]
pub struct ApprovalDecision {
    /// The request decided, as in [`RawRequest::request_id`].
    pub request_id: String,
    /// The decision.
    pub decision: DecisionKind,
    /// 0 (no risk seen) to 100.
    pub risk_score: u8,
    /// Why, one finding per entry.
    pub reasons: Vec<String>,
    /// The documents read to decide.
    pub documents_reviewed: Vec<String>,
}

/// [`ApprovalDecision`] before its rules are checked: what the schema describes and the
/// model writes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ApprovalDecision")]
struct DecisionFields {
    /// The request decided, as in the input's `request_id`.
    request_id: String,
    /// approve, reject or refer (to a person).
    decision: DecisionKind,
    /// 0 (no risk seen) to 100.
    #[schemars(range(max = 100))]
    risk_score: u8,
    /// Why, one finding per entry; at least one.
    #[schemars(length(min = 1))]
    reasons: Vec<String>,
    /// The documents read to decide (an approval needs at least one).
    documents_reviewed: Vec<String>,
}

/// Why a decision was refused: the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidDecision {
    /// `risk_score` above [`MAX_RISK_SCORE`].
    #[error("`risk_score` is {0}; it must be at most {MAX_RISK_SCORE}")]
    RiskScore(u8),
    /// No reason, or only blank ones.
    #[error("`reasons` must hold at least one non-blank reason")]
    NoReason,
    /// An approval that names no document.
    #[error("an `approve` must name at least one document in `documents_reviewed`")]
    ApprovalWithoutDocument,
}

impl TryFrom<DecisionFields> for ApprovalDecision {
    type Error = InvalidDecision;

    fn try_from(f: DecisionFields) -> Result<Self, InvalidDecision> {
        if f.risk_score > MAX_RISK_SCORE {
            return Err(InvalidDecision::RiskScore(f.risk_score));
        }
        if f.reasons.iter().all(|r| r.trim().is_empty()) {
            return Err(InvalidDecision::NoReason);
        }
        if f.decision == DecisionKind::Approve && f.documents_reviewed.is_empty() {
            return Err(InvalidDecision::ApprovalWithoutDocument);
        }
        Ok(ApprovalDecision {
            request_id: f.request_id,
            decision: f.decision,
            risk_score: f.risk_score,
            reasons: f.reasons,
            documents_reviewed: f.documents_reviewed,
        })
    }
}

impl JsonSchema for ApprovalDecision {
    fn schema_name() -> Cow<'static, str> {
        "ApprovalDecision".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        DecisionFields::json_schema(generator)
    }
}

agent! {
    /// Reviews a KYC request against the customer's uploaded documents and returns a typed
    /// decision; it reads uploads only, and writes nothing but review notes.
    pub struct KycReviewer;
    audit: { values: masked },
    name: "kyc-reviewer",
    input: RawRequest,
    output: ApprovalDecision,
    tools: [read_customer_file, save_review_note],
    skills: {
        review: [read_customer_file, save_review_note],
        check_document(DocumentRef -> DocumentCheck): [read_customer_file],
    },
    ceiling: [perms::kyc::review, perms::kyc::annotate],
    limits: { max_iterations: 10 },
    knowledge: [embedded("src/kyc/rulebook.md")],
}
