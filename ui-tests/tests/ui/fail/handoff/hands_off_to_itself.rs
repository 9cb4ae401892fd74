// A desk that grants a handoff tool whose target is the desk itself.
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

/// Hands the case back to the desk.
///
/// # Arguments
///
/// * `case` - the case
#[tool(permission = perms::kyc::read, handoff = Desk)]
fn to_desk(case: String);

agent! {
    /// Answers questions on files.
    pub struct Desk;
    tools: [read_file, to_desk],
}

fn main() {}
