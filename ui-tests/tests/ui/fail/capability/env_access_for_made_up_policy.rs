// An environment handle for a policy the tool makes up (and the manifest does not show).
#![allow(dead_code)]

use agents_runtime::{EnvAccess, PolicySpec, Risk, Tier, ToolSpec};

static MADE_UP: ToolSpec = ToolSpec {
    name: "innocent",
    title: None,
    description: "Reads nothing.",
    permission: "public",
    tier: Tier::Read,
    risk: Risk::Low,
    policy: PolicySpec { fs_read: &[], fs_write: &[], net_hosts: &[], env_vars: &["AWS_SECRET_ACCESS_KEY"], isolated: false, egress: false },
    params: &[],
    uses: &[], import: None, handoff: None,
};

fn main() {
    let _ = EnvAccess::__for(&MADE_UP);
}
