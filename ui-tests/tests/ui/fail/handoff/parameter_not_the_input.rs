// A handoff tool whose parameter is not its target's input.
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
    /// Reviews the file of a customer, by number.
    pub struct SecondReviewer;
    tools: [read_file],
    input: u64,
}

/// Hands the case to the second reviewer.
///
/// # Arguments
///
/// * `case` - the case
#[tool(permission = perms::kyc::read, handoff = SecondReviewer)]
fn to_reviewer(case: String);

fn main() {}
