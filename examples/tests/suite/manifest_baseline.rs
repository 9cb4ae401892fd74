//! Each agent's manifest equals its committed baseline, byte for byte. When a capability
//! change is intended, rewrite the baselines with `AGENTS_BLESS=1 cargo test -p examples`
//! and commit them with the code, so the reviewer sees both.

use agents_runtime::agents_core::baseline::assert_baseline;
use examples::clinic::Kinetix;
use examples::helpdesk::DeskLoop;

#[test]
fn clinic_manifest_matches_baseline() {
    assert_baseline(Kinetix::MANIFEST, concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/clinic.manifest.json"));
}

#[test]
fn helpdesk_manifest_matches_baseline() {
    assert_baseline(DeskLoop::MANIFEST, concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/helpdesk.manifest.json"));
}
