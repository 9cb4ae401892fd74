// An agent that grants itself: a run could call itself without end, and its manifest would
// have to name its own SHA-256.
use agents_runtime::{agent, permissions, tool};

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
    /// Reviews files, and asks itself for a second opinion.
    pub struct Reviewer;
    tools: [read_file],
    agents: [Reviewer],
}

fn main() {}
