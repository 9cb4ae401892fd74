//! A KYC supervisor whose model may run a second reviewer as a tool: the supervisor reads the
//! case file and asks [`KycSecondReviewer`] for a second look; the second reviewer reads the
//! file again and saves a review note, an action that waits for the analyst's decision like
//! any action of the supervisor's own.
//!
//! What it shows:
//!
//! - **One ceiling across agents.** The supervisor's `ceiling` lists `kyc.review` and
//!   `kyc.annotate`: everything the second reviewer reaches. Were `kyc.annotate` missing, the
//!   declaration would not compile, naming the second reviewer and the permission.
//! - **One manifest that pins the other.** The supervisor's manifest names the second
//!   reviewer with the SHA-256 of its manifest (`agent.agents`), so a change to the second
//!   reviewer changes the supervisor's hash and its baseline
//!   (`baselines/kyc-supervisor.manifest.json`).
//! - **One run tree.** The second reviewer runs as a child of the supervisor's run, for the
//!   same analyst, its records in the same chain under the path
//!   `kyc-supervisor/kyc-second-reviewer`.

use super::perms;
use super::tools::{read_customer_file, save_review_note};
use agents_runtime::agent;

agent! {
    /// Reviews a KYC case file a second time and saves a review note (the analyst approves
    /// the note before it is written); answers with its finding in one sentence.
    pub struct KycSecondReviewer;
    name: "kyc-second-reviewer",
    tools: [read_customer_file, save_review_note],
    ceiling: [perms::kyc::review, perms::kyc::annotate],
}

agent! {
    /// Supervises a KYC case: reads the case file and asks the second reviewer for a second
    /// look before answering.
    pub struct KycSupervisor;
    name: "kyc-supervisor",
    tools: [read_customer_file],
    ceiling: [perms::kyc::review, perms::kyc::annotate],
    agents: [KycSecondReviewer],
}
