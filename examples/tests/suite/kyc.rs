//! The KYC reviewer: its manifest and baseline, the typed output validated and a malformed
//! one refused and audited, each out-of-policy access refused at each level with its audit
//! record, the manifest's policy equal to what the handle enforces, the tool-call budget, and
//! the demo's printed records equal to its log.

use agents_runtime::RunResultExt as _;
use agents_runtime::agents_core::baseline::assert_baseline;
use agents_runtime::agents_core::canonical::sha256_hex;
use agents_runtime::agents_core::manifest::Manifest;
use agents_runtime::agents_core::policy::GlobSet;
use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::{ConfirmAnswer, ConfirmRequest, Confirmer};
use agents_runtime::{Agent, BoxFuture, RunStatus, Runtime, Tier, Verdict};
use examples::console::format_record;
use examples::kyc::app::{DemoFiles, MAX_TOOL_CALLS_PER_RUN, analyst, run_demo};
use examples::kyc::{
    ApprovalDecision, DecisionKind, KycReviewer, KycReviewerSkill, NOTES_ROOT, RawRequest, UPLOADS_ROOT, main_with,
};
use serde_json::json;
use std::sync::Arc;

fn manifest() -> Manifest {
    Manifest::parse(KycReviewer::MANIFEST).unwrap()
}

#[test]
fn manifest_matches_baseline() {
    assert_baseline(KycReviewer::MANIFEST, concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/kyc.manifest.json"));
}

#[test]
fn extractor_manifest_matches_baseline_and_records_isolation() {
    use examples::kyc::vendor::KycExtractor;
    assert_baseline(
        KycExtractor::MANIFEST,
        concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/kyc-extractor.manifest.json"),
    );
    let m = Manifest::parse(KycExtractor::MANIFEST).unwrap();
    let vendor = m.tool("vendor_extract_text").unwrap();
    assert!(vendor.policy.isolated);
    // Declared exactly as the reviewer's read tool.
    assert_eq!(vendor.policy.fs, manifest().tool("read_customer_file").unwrap().policy.fs);
    assert!(vendor.policy.net.hosts.is_empty() && vendor.policy.env.vars.is_empty());
}

#[test]
fn manifest_command_prints_exactly_the_manifest() {
    let mut out = Vec::new();
    main_with(&["manifest".to_owned()], &mut out).unwrap();
    assert_eq!(out, KycReviewer::MANIFEST.as_bytes());
    assert_eq!(sha256_hex(&out), KycReviewer::MANIFEST_SHA256);
}

#[test]
fn the_manifest_declares_the_seed_policy_beneath_the_configured_roots() {
    let m = manifest();
    assert_eq!(m.agent.name, "kyc-reviewer");
    assert_eq!((m.agent.input.as_str(), m.agent.output.as_str()), ("RawRequest", "ApprovalDecision"));
    let review = m.agent.skills.iter().find(|s| s.name == "review").expect("a `review` skill");
    assert!(review.tools.iter().any(|t| t == "read_customer_file"));
    let read = m.tool("read_customer_file").unwrap();
    assert_eq!(read.policy.fs.read, [format!("{UPLOADS_ROOT}/**")]);
    assert!(read.policy.fs.write.is_empty() && read.policy.net.hosts.is_empty() && read.policy.env.vars.is_empty());
    assert_eq!(read.risk.as_str(), "medium");
    assert_eq!(read.tier, Tier::Read);
    let note = m.tool("save_review_note").unwrap();
    assert_eq!(note.policy.fs.write, [format!("{NOTES_ROOT}/**")]);
    assert!(note.policy.fs.read.is_empty() && note.policy.net.hosts.is_empty() && note.policy.env.vars.is_empty());
    assert_eq!(note.tier, Tier::Action);
}

fn decision(v: serde_json::Value) -> Result<ApprovalDecision, String> {
    serde_json::from_value(v).map_err(|e| e.to_string())
}

#[test]
fn the_decision_is_validated_when_parsed() {
    let ok = json!({"request_id": "r", "decision": "approve", "risk_score": 10, "reasons": ["match"], "documents_reviewed": ["/a"]});
    let d = decision(ok.clone()).unwrap();
    assert_eq!((d.decision, d.risk_score), (DecisionKind::Approve, 10));

    let with = |k: &str, v: serde_json::Value| {
        let mut x = ok.clone();
        x[k] = v;
        x
    };
    let err = decision(with("risk_score", json!(250))).unwrap_err();
    assert!(err.contains("`risk_score` is 250; it must be at most 100"), "{err}");
    let err = decision(with("reasons", json!([" "]))).unwrap_err();
    assert!(err.contains("at least one non-blank reason"), "{err}");
    let err = decision(with("documents_reviewed", json!([]))).unwrap_err();
    assert!(err.contains("an `approve` must name at least one document"), "{err}");
    // A referral needs no document.
    assert!(decision(with("decision", json!("refer")).clone()).is_ok_and(|d| d.decision == DecisionKind::Refer));
    let err = decision(with("decision", json!("maybe"))).unwrap_err();
    assert!(err.contains("unknown variant `maybe`"), "{err}");
    let err = decision(with("approved_by", json!("me"))).unwrap_err();
    assert!(err.contains("unknown field `approved_by`"), "{err}");

    // The schema the model is sent carries the same rules it can express.
    let schema = serde_json::to_value(schemars::schema_for!(ApprovalDecision)).unwrap();
    assert_eq!(schema["properties"]["risk_score"]["maximum"], 100, "{schema}");
    assert_eq!(schema["properties"]["reasons"]["minItems"], 1, "{schema}");
    assert_eq!(schema["additionalProperties"], false, "{schema}");
}

fn request(documents: Vec<String>) -> RawRequest {
    RawRequest {
        request_id: "kyc-1".into(),
        customer_id: "c-1001".into(),
        full_name: "Astrid Lindgren".into(),
        country: "SE".into(),
        documents,
    }
}

#[tokio::test]
async fn a_malformed_decision_is_refused_with_a_clear_error_and_audited() {
    let files = DemoFiles::create().unwrap();
    let passport = files.upload("c-1001/passport.txt");
    let cases = [
        (
            json!({"request_id": "kyc-1", "decision": "approve", "risk_score": 250, "reasons": ["fine"], "documents_reviewed": [passport]}),
            "`risk_score` is 250",
        ),
        (
            json!({"request_id": "kyc-1", "decision": "approve", "risk_score": 5, "reasons": ["fine"], "documents_reviewed": []}),
            "an `approve` must name at least one document",
        ),
        (
            json!({"request_id": "kyc-1", "decision": "approve", "risk_score": 5, "reasons": []}),
            "missing field `documents_reviewed`",
        ),
    ];
    for (answer, why) in cases {
        let provider = Arc::new(ScriptedProvider::new([
            tool_call("read_customer_file", json!({"path": passport}).to_string()),
            reply(answer.to_string()),
        ]));
        let sink = Arc::new(MemorySink::new());
        let rt = Runtime::builder(sink.clone(), provider).roles(examples::kyc::roles().clone()).build();
        let out = rt
            .start_in_skill(analyst(), "s", KycReviewerSkill::Review, request(vec![passport.clone()]))
            .unwrap()
            .wait()
            .await;
        assert_eq!(out.status(), RunStatus::Failed, "{answer}");
        assert!(out.output().is_none());
        let error = out.error_text().unwrap();
        assert!(error.starts_with("the model's final answer does not fit `ApprovalDecision`: "), "{error}");
        assert!(error.contains(why), "{error}");
        let records = sink.records();
        let refusal: Vec<&AuditRecord> = records
            .iter()
            .filter(|r| r.status == AuditStatus::Notice && r.reason.as_deref().is_some_and(|r| r.starts_with("output")))
            .collect();
        assert_eq!(refusal.len(), 1, "{records:?}");
        assert_eq!(refusal[0].reason.as_deref(), Some(format!("output refused: {error}").as_str()));
        assert_eq!(refusal[0].manifest_sha256, KycReviewer::MANIFEST_SHA256);
    }
}

/// The one record of `status` among `records`, which must exist.
fn one(records: &[AuditRecord], status: AuditStatus) -> &AuditRecord {
    let found: Vec<&AuditRecord> = records.iter().filter(|r| r.status == status).collect();
    assert_eq!(found.len(), 1, "one `{}` record expected in {records:#?}", status.as_str());
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_out_of_policy_access_is_refused_at_each_level_with_its_record() {
    let mut out = Vec::new();
    let report = run_demo(&mut out).await.unwrap();
    std::fs::remove_file(&report.audit_path).unwrap();
    let read_glob = format!("[\"{UPLOADS_ROOT}/**\"]");
    let write_glob = format!("[\"{NOTES_ROOT}/**\"]");
    let a = &report.attempts;
    assert_eq!(a.len(), 6);
    use AuditStatus::*;

    // In the policy: runs at both levels.
    for allowed in [&a[0], &a[5]] {
        assert!(allowed.declared_allows, "{}", allowed.what);
        one(&allowed.at_gate, Executed);
        one(&allowed.in_process, Executed);
    }
    // Outside by its text (`../../etc/passwd`, a climb out with `..`, a write over the
    // evidence): denied at the gate, naming the path and the policy, and nothing ran; without
    // the gate's check, refused by the handle, naming the path and the policy.
    for (outside, glob, verb) in
        [(&a[1], &read_glob, "read"), (&a[2], &read_glob, "read"), (&a[4], &write_glob, "write")]
    {
        assert!(!outside.declared_allows, "{}", outside.what);
        let denied = one(&outside.at_gate, Denied);
        let reason = denied.reason.as_deref().unwrap();
        assert!(reason.contains(&format!("path `{}` outside declared {verb} policy", outside.path)), "{reason}");
        assert!(reason.contains(glob.as_str()), "{reason}");
        assert!(outside.at_gate.iter().all(|r| r.status != Executed && r.status != Proposed), "{:#?}", outside.at_gate);
        let failed = one(&outside.in_process, Failed);
        let reason = failed.reason.as_deref().unwrap();
        assert!(
            reason.contains(&format!(
                "may not {verb} `{}`: not in its declared policy (fs {verb}: {glob})",
                outside.path
            )),
            "{reason}"
        );
        assert!(outside.in_process.iter().all(|r| r.status != Executed));
    }
    assert_eq!(a[1].path, "../../etc/passwd");
    // A symlink out of the uploads: its text is inside the policy, so the gate lets it pass;
    // the handle refuses it at both levels, naming the path and the policy.
    let symlink = &a[3];
    assert!(symlink.declared_allows);
    for records in [&symlink.at_gate, &symlink.in_process] {
        let failed = one(records, Failed);
        let reason = failed.reason.as_deref().unwrap();
        assert!(reason.contains(&format!("may not read `{}`: it resolves outside", symlink.path)), "{reason}");
        assert!(reason.contains(&read_glob), "{reason}");
        assert!(records.iter().all(|r| r.status != Executed));
    }
    // The write over the evidence was approved by the analyst and still refused by the handle.
    one(&a[4].in_process, Confirmed);

    // The review itself: the injected read denied at the gate, the decision typed.
    let review = report.decision.expect("the review's decision");
    assert_eq!(review.decision, DecisionKind::Approve);
    assert!(report.records.iter().any(|r| r.status == Denied
        && r.reason.as_deref().is_some_and(|x| x.contains("etc/passwd` outside declared read policy"))));
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("root:x:0:0"), "the demo printed /etc/passwd");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_call_budget_refuses_the_call_past_it_and_audits_it() {
    let mut out = Vec::new();
    let report = run_demo(&mut out).await.unwrap();
    std::fs::remove_file(&report.audit_path).unwrap();
    let budget: Vec<&AuditRecord> = report
        .records
        .iter()
        .filter(|r| r.reason.as_deref().is_some_and(|x| x.contains("budget exceeded: maxToolCalls")))
        .collect();
    assert_eq!(budget.len(), 1, "{budget:#?}");
    assert_eq!(budget[0].status, AuditStatus::Denied);
    let run = &budget[0].run_id;
    let executed = report.records.iter().filter(|r| &r.run_id == run && r.status == AuditStatus::Executed).count();
    assert_eq!(executed, MAX_TOOL_CALLS_PER_RUN as usize);
    assert_eq!(report.budget_decision.map(|d| d.decision), Some(DecisionKind::Refer));
    // The malformed answer of the last scene: failed, no output.
    assert_eq!(report.malformed.0, RunStatus::Failed);
    assert!(report.malformed.1.unwrap().contains("`risk_score` is 250"));
}

struct Approves;
impl Confirmer for Approves {
    fn confirm(&self, _: ConfirmRequest) -> BoxFuture<'static, ConfirmAnswer> {
        Box::pin(async { ConfirmAnswer::Decided(Verdict::Approve) })
    }
}

/// The manifest's text, parsed, decides the same paths as the handles the runtime gives the
/// tools: each path is called through a gate without a path check, so the handle decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manifest_policy_is_what_the_handle_enforces() {
    let files = DemoFiles::create().unwrap();
    let m = manifest();
    let read = GlobSet::new(&m.tool("read_customer_file").unwrap().policy.fs.read);
    let write = GlobSet::new(&m.tool("save_review_note").unwrap().policy.fs.write);
    let up = files.uploads().display().to_string();
    let paths = [
        files.upload("c-1001/passport.txt"),
        files.upload("c-1001/missing.txt"),
        files.upload("c-1003/statement-page-8.txt"),
        format!("{up}/c-1001/./passport.txt"),
        format!("{up}/c-1001/../c-1001/passport.txt"),
        format!("{up}/../../uploads-other/x.txt"),
        files.escape_by_dots(),
        UPLOADS_ROOT.to_owned(),
        format!("{UPLOADS_ROOT}x/a.txt"),
        format!("{NOTES_ROOT}/{}.txt", files.uploads().file_name().unwrap().to_string_lossy()),
        files.note("n.txt"),
        "/etc/passwd".into(),
        "../../etc/passwd".into(),
        "passport.txt".into(),
        // The same note as above, reached from the uploads root with `..`.
        format!("{UPLOADS_ROOT}/../notes/{}.txt", files.uploads().file_name().unwrap().to_string_lossy()),
    ];
    let sink = Arc::new(MemorySink::new());
    let rt = Runtime::builder(sink, Arc::new(ScriptedProvider::new([]))).roles(examples::kyc::roles().clone()).build();
    let session = rt.direct::<KycReviewer>(analyst(), "equal", Some(Arc::new(Approves))).await.unwrap();
    let refused_by_policy = |content: &serde_json::Value| {
        content["error"].as_str().is_some_and(|e| e.contains(": not in its declared policy"))
    };
    let mut checked = 0;
    for (i, p) in paths.iter().enumerate() {
        let lexical_in = |set: &GlobSet| {
            let path = std::path::Path::new(p);
            path.is_absolute() && {
                // `.` and `..` resolved as text, as the handle reads a path first.
                let mut out = std::path::PathBuf::new();
                let mut ok = true;
                for c in path.components() {
                    match c {
                        std::path::Component::ParentDir => ok &= out.pop(),
                        std::path::Component::CurDir => {}
                        c => out.push(c),
                    }
                }
                ok && set.is_match(&out)
            }
        };
        let r = session.call(&format!("r{i}"), "read_customer_file", &json!({"path": p}).to_string()).await;
        assert_eq!(!refused_by_policy(&r.content), lexical_in(&read), "read `{p}`: {}", r.content);
        let args = json!({"path": p, "note": "n"}).to_string();
        let w = session.call(&format!("w{i}"), "save_review_note", &args).await;
        assert_eq!(!refused_by_policy(&w.content), lexical_in(&write), "write `{p}`: {}", w.content);
        checked += 1;
    }
    assert_eq!(checked, paths.len());
    // What the manifest allows was really read and written.
    let r = session
        .call("ok-read", "read_customer_file", &json!({"path": files.upload("c-1001/passport.txt")}).to_string())
        .await;
    assert!(r.content["text"].as_str().unwrap().contains("LINDGREN"), "{}", r.content);
    assert!(std::fs::read_to_string(files.note("n.txt")).unwrap().contains("reviewed by u-kim"));
    // The note written directly beneath the notes root is this test's to remove.
    std::fs::remove_file(&paths[9]).unwrap();
    // The specs the handles are built from are the manifest's entries.
    for (tool, spec_globs, manifest_globs) in [
        (
            "read_customer_file",
            <KycReviewer as Agent>::tool_spec("read_customer_file").unwrap().policy.fs_read,
            &m.tool("read_customer_file").unwrap().policy.fs.read,
        ),
        (
            "save_review_note",
            <KycReviewer as Agent>::tool_spec("save_review_note").unwrap().policy.fs_write,
            &m.tool("save_review_note").unwrap().policy.fs.write,
        ),
    ] {
        assert_eq!(spec_globs.iter().map(|g| g.to_string()).collect::<Vec<_>>(), *manifest_globs, "{tool}");
    }
}

/// The demo as `cargo run -p examples --example kyc -- --demo --keep-log` runs it.
#[test]
fn the_demo_prints_only_records_and_ids_its_audit_log_holds() {
    let mut out = Vec::new();
    main_with(&["--demo".to_owned(), "--keep-log".to_owned()], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let path: std::path::PathBuf = text
        .lines()
        .find_map(|l| l.strip_prefix("audit log       "))
        .and_then(|l| l.split(" (").next())
        .expect("the demo names its audit log")
        .into();
    let log = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let records: Vec<AuditRecord> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(records.len() > 50);
    // Every run of the reviewer works within the skill the application chose.
    // (Direct sessions, which call its tools outside a run's loop and end `closed`, work
    // within no skill.)
    let runs: std::collections::BTreeSet<&str> = records
        .iter()
        .filter(|r| r.status == AuditStatus::RunFinished && r.agent == "kyc-reviewer")
        .filter(|r| r.reason.as_deref() != Some("closed"))
        .map(|r| &*r.run_id)
        .collect();
    let chosen: Vec<&AuditRecord> = records.iter().filter(|r| r.status == AuditStatus::SkillChosen).collect();
    assert!(!runs.is_empty());
    let chosen_runs: std::collections::BTreeSet<&str> = chosen.iter().map(|r| &*r.run_id).collect();
    assert_eq!(chosen_runs, runs, "one skill_chosen record per run of the reviewer");
    assert_eq!(chosen.len(), runs.len());
    for r in chosen {
        assert_eq!(r.reason.as_deref(), Some("skill `review` chosen by the application"), "{r:?}");
    }
    let shown: Vec<&str> = text.lines().map(str::trim_start).filter(|l| l.starts_with("[audit #")).collect();
    assert_eq!(shown.len(), records.len());
    for (line, record) in shown.iter().zip(&records) {
        assert_eq!(*line, format_record(record));
    }
    let ids: std::collections::BTreeSet<&str> = records.iter().filter_map(|r| r.call_id.as_deref()).collect();
    let printed: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .filter(|w| {
            ["call_", "gate-", "handle-"]
                .iter()
                .any(|p| w.strip_prefix(p).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
        })
        .collect();
    assert!(printed.len() > 10);
    for id in printed {
        assert!(ids.contains(id), "the demo shows `{id}`, which is not in its audit log");
    }
    assert!(text.contains("audit log verified"));
    assert!(text.contains(&format!("The audit log is kept at {}", path.display())));
}

#[test]
fn unknown_options_are_refused_before_anything_starts() {
    for args in [&["--demo", "--keep"][..], &["manifest", "x"], &["review"]] {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let mut out = Vec::new();
        let err = main_with(&args, &mut out).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{args:?}");
        assert!(err.to_string().contains("usage: kyc"), "{err}");
        assert!(out.is_empty());
    }
}

#[tokio::test]
async fn the_reviewer_consults_its_rulebook_pinned_in_its_manifest() {
    let m = manifest();
    assert_eq!(m.agent.knowledge.len(), 1);
    assert_eq!(m.agent.knowledge[0].name, "rulebook");
    assert_eq!(m.agent.knowledge[0].sha256, sha256_hex(include_bytes!("../../src/kyc/rulebook.md")));
    let files = DemoFiles::create().unwrap();
    let passport = files.upload("c-1001/passport.txt");
    let answer = json!({"request_id": "kyc-1", "decision": "refer", "risk_score": 10,
        "reasons": ["R2: no proof of address"], "documents_reviewed": [passport]});
    let provider = Arc::new(ScriptedProvider::new([
        tool_call("read_customer_file", json!({"path": passport}).to_string()),
        reply(answer.to_string()),
    ]));
    let sink = Arc::new(MemorySink::new());
    let rt = Runtime::builder(sink.clone(), provider.clone()).roles(examples::kyc::roles().clone()).build();
    let out = rt
        .start_in_skill(analyst(), "s", KycReviewerSkill::Review, request(vec![passport.clone()]))
        .unwrap()
        .wait()
        .await;
    assert_eq!(out.status(), RunStatus::Completed, "{:?}", out.error_text());
    // The rulebook's passages reached the model as data, and the record names them by id.
    let first = &provider.requests()[0];
    let data = first.messages.iter().any(|m| {
        matches!(m, agents_runtime::provider::ChatMessage::User { content }
            if content.contains(agents_runtime::knowledge::PASSAGES_OPEN) && content.contains("rulebook"))
    });
    assert!(data, "{:?}", first.messages);
    assert!(!first.system.contains("Proof of address"), "never in the system prompt");
    let notice = sink
        .records()
        .into_iter()
        .find(|r| r.reason.as_deref().is_some_and(|r| r.starts_with("knowledge: ")))
        .expect("a knowledge notice");
    let evidence = serde_json::to_string(&notice.result).unwrap();
    assert!(evidence.contains("\"source\":\"rulebook\""), "{evidence}");
}
