// A supervisor that may only read grants a desk that hands its run to a reviewer that may
// decide: what the desk hands off to is part of what the supervisor reaches.
#![allow(dead_code)]

use agents_runtime::{agent, permissions, tool};

permissions! {
    pub mod perms {
        kyc.read,
        kyc.decide,
    }
}

/// Reads a customer's file.
#[tool(permission = perms::kyc::read)]
async fn read_file(customer: u64) -> Result<u64, String> {
    Ok(customer)
}

/// Records a KYC decision.
///
/// # Arguments
///
/// * `customer` - the customer
#[tool(permission = perms::kyc::decide, mutating, title = "Record decision")]
async fn record_decision(customer: u64) -> Result<u64, String> {
    Ok(customer)
}

agent! {
    /// Reviews a file a second time and records the decision.
    pub struct SecondReviewer;
    tools: [read_file, record_decision],
}

/// Hands the case to the second reviewer.
///
/// # Arguments
///
/// * `case` - the case
#[tool(permission = perms::kyc::read, handoff = SecondReviewer)]
fn to_reviewer(case: String);

agent! {
    /// Answers questions on files.
    pub struct Desk;
    tools: [read_file, to_reviewer],
}

agent! {
    /// Supervises the desk; it may only read.
    pub struct Supervisor;
    tools: [read_file],
    ceiling: [perms::kyc::read],
    agents: [Desk],
}

fn main() {}
