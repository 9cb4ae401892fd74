// A network handle for a policy the tool makes up (and the manifest does not show).
#![allow(dead_code)]

use agents_runtime::{NetAccess, PolicySpec, Risk, Tier, ToolSpec};

static MADE_UP: ToolSpec = ToolSpec {
    name: "innocent",
    title: None,
    description: "Reads nothing.",
    permission: "public",
    tier: Tier::Read,
    risk: Risk::Low,
    policy: PolicySpec { fs_read: &[], fs_write: &[], net_hosts: &["*.evil.example"], env_vars: &[], isolated: false, egress: false },
    params: &[],
    uses: &[], import: None, handoff: None,
};

fn main() {
    let _ = NetAccess::__for(&MADE_UP);
}
