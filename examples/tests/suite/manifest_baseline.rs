//! Each agent's manifest, its reviewed document (the manifest with the JSON Schemas of its
//! input and output) and each composite's graph manifest equals its committed baseline,
//! byte for byte. When a capability
//! change is intended, rewrite the baselines with `AGENTS_BLESS=1 cargo test -p examples`
//! and commit them with the code, so the reviewer sees both.

use agents_runtime::agents_core::baseline::assert_baseline;
use agents_runtime::agents_core::compose::baseline::assert_baseline as assert_graph_baseline;
use agents_runtime::agents_core::reviewed;
use examples::clinic::Kinetix;
use examples::helpdesk::DeskLoop;
use examples::helpdesk::triage::HelpdeskTriage;
use examples::kyc::KycReviewer;
use examples::kyc::pipeline::{KycPanel, KycPipeline};
use examples::kyc::supervisor::{KycSecondReviewer, KycSupervisor};
use examples::kyc::vendor::KycExtractor;

#[test]
fn clinic_manifest_matches_baseline() {
    assert_baseline(Kinetix::MANIFEST, concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/clinic.manifest.json"));
}

#[test]
fn helpdesk_manifest_matches_baseline() {
    assert_baseline(DeskLoop::MANIFEST, concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/helpdesk.manifest.json"));
}

/// The reviewed documents: a change of what an agent takes or returns fails here even when
/// its manifest (which names the types only) is unchanged.
#[test]
fn reviewed_documents_match_their_baselines() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/baselines");
    assert_baseline(&reviewed::of::<Kinetix>().text, format!("{dir}/clinic.reviewed.json"));
    assert_baseline(&reviewed::of::<DeskLoop>().text, format!("{dir}/helpdesk.reviewed.json"));
    assert_baseline(&reviewed::of::<KycReviewer>().text, format!("{dir}/kyc.reviewed.json"));
    assert_baseline(&reviewed::of::<KycExtractor>().text, format!("{dir}/kyc-extractor.reviewed.json"));
}

/// The manifest inside each reviewed baseline is exactly the agent's `MANIFEST`, so the
/// plain baselines (which the composites pin by hash) and the reviewed ones agree.
#[test]
fn each_reviewed_baseline_holds_the_agents_manifest() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/baselines");
    for (file, sha) in [
        ("clinic", Kinetix::MANIFEST_SHA256),
        ("helpdesk", DeskLoop::MANIFEST_SHA256),
        ("kyc", KycReviewer::MANIFEST_SHA256),
        ("kyc-extractor", KycExtractor::MANIFEST_SHA256),
    ] {
        let text = std::fs::read_to_string(format!("{dir}/{file}.reviewed.json")).unwrap();
        let doc = reviewed::Document::parse(&text).unwrap();
        assert_eq!(doc.manifest.sha256(), sha, "{file}");
        assert!(doc.io.is_some(), "{file}");
    }
}

#[test]
fn kyc_pipeline_graph_manifest_matches_baseline() {
    assert_graph_baseline(
        KycPipeline::MANIFEST,
        concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/kyc-pipeline.composite.json"),
    );
}

#[test]
fn helpdesk_triage_graph_manifest_matches_baseline() {
    assert_graph_baseline(
        HelpdeskTriage::MANIFEST,
        concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/helpdesk-triage.composite.json"),
    );
}

#[test]
fn kyc_panel_graph_manifest_matches_baseline() {
    assert_graph_baseline(
        KycPanel::MANIFEST,
        concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/kyc-panel.composite.json"),
    );
}

#[test]
fn a_composite_names_each_agent_by_the_hash_of_its_committed_baseline() {
    use agents_runtime::agents_core::canonical::sha256_hex;
    let graph: serde_json::Value = serde_json::from_str(KycPipeline::MANIFEST).unwrap();
    let reviewer = graph["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "kyc-reviewer").unwrap();
    let baseline = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/kyc.manifest.json")).unwrap();
    assert_eq!(reviewer["manifest_sha256"], sha256_hex(&baseline));
}

/// The supervisor's manifest pins the second reviewer's hash: a change to the second reviewer
/// changes both baselines.
#[test]
fn kyc_supervisor_manifests_match_their_baselines() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/baselines");
    assert_baseline(KycSupervisor::MANIFEST, format!("{dir}/kyc-supervisor.manifest.json"));
    assert_baseline(KycSecondReviewer::MANIFEST, format!("{dir}/kyc-second-reviewer.manifest.json"));
}
