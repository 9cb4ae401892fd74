// Two agents that grant each other: each manifest names the other's SHA-256, so neither can
// be computed first; the declaration cannot be written.
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
    /// Reviews files first.
    pub struct First;
    tools: [read_file],
    agents: [Second],
}

agent! {
    /// Reviews files second.
    pub struct Second;
    tools: [read_file],
    agents: [First],
}

fn main() {}
