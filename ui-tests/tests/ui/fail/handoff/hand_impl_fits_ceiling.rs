// A hand-written claim that a handoff target fits within the ceiling of the agent that hands
// off to it.
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

agent! {
    /// Answers questions on files; it may only read.
    pub struct Desk;
    tools: [read_file],
    ceiling: [perms::kyc::read],
}

impl agents_runtime::FitsCeilingOf<Desk> for SecondReviewer {}

fn main() {}
