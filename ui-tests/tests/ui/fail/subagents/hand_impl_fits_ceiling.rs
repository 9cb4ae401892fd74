// A hand-written claim that a type fits within an agent's ceiling.
#![allow(dead_code)]

use agents_runtime::{FitsCeilingOf, agent, permissions, tool};

permissions! {
    pub mod perms {
        kyc.read,
    }
}

/// Reads a customer's file.
#[tool(permission = perms::kyc::read)]
async fn read_file(customer: u64) -> Result<u64, String> {
    Ok(customer)
}

agent! {
    /// Supervises reviews; it may only read.
    pub struct Supervisor;
    tools: [read_file],
    ceiling: [perms::kyc::read],
}

/// Not an agent.
struct Anything;

impl FitsCeilingOf<Supervisor> for Anything {}

fn main() {}
