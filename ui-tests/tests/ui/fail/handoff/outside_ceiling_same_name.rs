// A desk hands its run to a reviewer whose decision needs another application's permission
// with the same name as one in the desk's ceiling: by name the reviewer fits, by type it does
// not, and the type decides.
#![allow(dead_code)]

use agents_runtime::{agent, permissions, tool};

permissions! {
    pub mod perms {
        kyc.read,
        kyc.decide,
    }
}

// Another application's permissions, with a name that `perms` also declares.
mod billing {
    agents_runtime::permissions! {
        pub mod perms {
            kyc.decide,
        }
    }
}

/// Reads a customer's file.
#[tool(permission = perms::kyc::read)]
async fn read_file(customer: u64) -> Result<u64, String> {
    Ok(customer)
}

/// Records a billing decision.
///
/// # Arguments
///
/// * `customer` - the customer
#[tool(permission = billing::perms::kyc::decide, mutating, title = "Record decision")]
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
    /// Answers questions on files and decides KYC cases, not billing ones.
    pub struct Desk;
    tools: [read_file, to_reviewer],
    ceiling: [perms::kyc::read, perms::kyc::decide],
}

fn main() {}
