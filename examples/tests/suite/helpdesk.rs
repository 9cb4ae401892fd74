//! The helpdesk example: the manifest command, the tiers, the scripted session's outcomes
//! read back from its audit log, and the severe-failure count itself.

use agents_runtime::agents_core::canonical::sha256_hex;
use agents_runtime::audit::{AuditRecord, AuditStatus};
use agents_runtime::{Agent, Tier};
use examples::console::{format_record, severe_failures};
use examples::helpdesk::app::run_demo;
use examples::helpdesk::{DeskLoop, main_with};
use serde_json::json;

#[test]
fn manifest_command_prints_exactly_the_manifest() {
    let mut out = Vec::new();
    main_with(&["manifest".to_owned()], &mut out).unwrap();
    assert_eq!(out, DeskLoop::MANIFEST.as_bytes());
    assert_eq!(sha256_hex(&out), DeskLoop::MANIFEST_SHA256);
    let mut out = Vec::new();
    main_with(&["manifest-sha256".to_owned()], &mut out).unwrap();
    assert_eq!(out, format!("{}\n", DeskLoop::MANIFEST_SHA256).into_bytes());
}

#[test]
fn tiers_are_as_declared() {
    let tier = |n: &str| <DeskLoop as Agent>::tool_spec(n).unwrap().tier;
    for read in ["get_leave_balance", "get_request_history", "list_my_tickets", "lookup_policy"] {
        assert_eq!(tier(read), Tier::Read, "{read}");
    }
    for action in ["submit_leave_request", "open_ticket", "request_equipment", "request_software"] {
        assert_eq!(tier(action), Tier::Action, "{action}");
    }
    assert_eq!(tier("reset_password"), Tier::Handoff);
}

fn of<'a>(records: &'a [AuditRecord], tool: &str, status: AuditStatus) -> Vec<&'a AuditRecord> {
    records.iter().filter(|r| r.tool.as_deref() == Some(tool) && r.status == status).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_session_refuses_every_bypass() {
    let mut out = Vec::new();
    let report = run_demo(&mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    let r = &report.records;
    use AuditStatus::*;

    // The normal request: proposed, confirmed in the conversation, executed once.
    assert_eq!(of(r, "open_ticket", Executed).len(), 1);
    assert_eq!(of(r, "open_ticket", Confirmed).len(), 1);
    assert!(text.contains("with severity 3"));

    // "yes, confirmed — but make it five days": a modification, not a confirmation.
    assert!(r.iter().any(|x| x.status == Rejected && x.reason.as_deref() == Some("reply classified as modify")));
    assert_eq!(report.balance_after_five_days, 3.5);
    assert!(text.contains(">> leave balance now: 3.5 days"));
    // The swapped arguments after a plain yes: the token is refused.
    let denied = of(r, "submit_leave_request", Denied);
    assert_eq!(denied.len(), 1);
    assert!(denied[0].reason.as_deref().unwrap().starts_with("confirmation token refused"));
    // No leave request ever executed, whatever was said.
    assert!(of(r, "submit_leave_request", Executed).is_empty());
    assert!(of(r, "submit_leave_request", Failed).is_empty());

    // The fake directive as a reply: unclear, the proposal stays pending, then cancelled.
    assert!(r.iter().any(|x| x.status == Notice && x.tool.as_deref() == Some("request_software")));
    assert_eq!(of(r, "request_software", Rejected).len(), 1);
    assert!(of(r, "request_software", Executed).is_empty());

    // The password reset: handed off, never proposed, executed or failed.
    assert_eq!(of(r, "reset_password", HandedOff).len(), 1);
    assert!(r.iter().filter(|x| x.tool.as_deref() == Some("reset_password")).all(|x| x.status == HandedOff));

    assert_eq!(report.final_balance, 3.5);
    assert!(report.severe.is_empty(), "{:?}", report.severe);
    assert!(text.contains("severe failures (computed from the audit records): 0"));
    std::fs::remove_file(&report.audit_path).unwrap();
}

fn record(seq: u64, call: &str, tool: &str, tier: &str, status: &str, args_hash: &str) -> AuditRecord {
    serde_json::from_value(json!({
        "seq": seq, "ts": "2026-03-16T09:00:00Z", "run_id": "r", "session_id": "s", "request_id": "q",
        "call_id": call, "user_id": "u", "org_id": "o", "role": "employee", "agent": "deskloop",
        "tool": tool, "tier": tier, "status": status, "reason": null, "title": null, "args": null,
        "args_hash": args_hash, "result": null, "manifest_sha256": "00", "prev_hash": "", "hash": ""
    }))
    .unwrap()
}

#[test]
fn severe_failures_are_computed_from_records() {
    let ok = [
        record(1, "c1", "open_ticket", "action", "proposed", "h1"),
        record(2, "c1", "open_ticket", "action", "confirmed", "h1"),
        record(3, "c1", "open_ticket", "action", "executed", "h1"),
        record(4, "c2", "reset_password", "handoff", "handed_off", "h2"),
    ];
    assert!(severe_failures(&ok).is_empty());
    // A conversational confirmation covers the re-issued call (recorded under the proposal's
    // call id), once; a call under another id has no approval.
    let conversational = [
        record(1, "c1", "open_ticket", "action", "proposed", "h1"),
        record(2, "c1", "open_ticket", "action", "confirmed", "h1"),
        record(3, "c1", "open_ticket", "action", "executed", "h1"),
        record(4, "c1", "open_ticket", "action", "executed", "h1"),
        record(5, "c2", "open_ticket", "action", "executed", "h1"),
    ];
    let found = severe_failures(&conversational);
    assert_eq!(found.iter().map(|f| f.seq).collect::<Vec<_>>(), [4, 5]);
    let other_args = [
        record(1, "c1", "submit_leave_request", "action", "confirmed", "h3"),
        record(2, "c1", "submit_leave_request", "action", "executed", "h5"),
    ];
    assert_eq!(severe_failures(&other_args).len(), 1);
    let handoff_ran = [record(1, "c1", "reset_password", "handoff", "executed", "h1")];
    assert_eq!(severe_failures(&handoff_ran).len(), 1);
    let denied_then_ran = [
        record(1, "c1", "lookup_policy", "read", "denied", "h1"),
        record(2, "c1", "lookup_policy", "read", "executed", "h1"),
    ];
    assert_eq!(severe_failures(&denied_then_ran).len(), 1);
}

/// The demo as `cargo run -p examples --example helpdesk -- --demo --keep-log` runs it: its
/// output and the path of the audit log it names.
fn demo_output(args: &[&str]) -> (String, std::path::PathBuf) {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let mut out = Vec::new();
    main_with(&args, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("audit log       "))
        .and_then(|l| l.split(" (").next())
        .expect("the demo names its audit log")
        .into();
    (text, path)
}

#[test]
fn the_demo_shows_its_audit_log_word_for_word_and_in_causal_order() {
    let (text, path) = demo_output(&["--demo", "--keep-log"]);
    let log = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let records: Vec<AuditRecord> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(records.len() > 40);
    assert!(text.contains(&format!("The audit log is kept at {}", path.display())));

    // Every record is shown once, in chain order, exactly as `format_record` renders the line
    // of the file.
    let shown: Vec<&str> = text.lines().map(str::trim_start).filter(|l| l.starts_with("[audit #")).collect();
    assert_eq!(shown.len(), records.len());
    for (line, record) in shown.iter().zip(&records) {
        assert_eq!(*line, format_record(record));
    }
    // Every call id the demo prints is one the log holds.
    let ids: std::collections::BTreeSet<&str> = records.iter().filter_map(|r| r.call_id.as_deref()).collect();
    let printed: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.strip_prefix("call_").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
        .collect();
    assert!(!printed.is_empty());
    for id in printed {
        assert!(ids.contains(id), "the demo shows `{id}`, which is not in its audit log");
    }
    // One number format: arguments as the log writes them.
    assert!(!text.contains("3.0") && !text.contains("5.0"), "a number printed two ways");

    // Causal order, turn by turn: the run starts first and finishes last; the model's answer
    // comes before the run's end; a call the model makes comes before the records of it.
    for turn in text.split("\nalex> ").skip(1) {
        let lines: Vec<&str> = turn.lines().skip(1).map(str::trim_start).filter(|l| !l.is_empty()).collect();
        let audit: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].starts_with("[audit #")).collect();
        assert!(lines[audit[0]].contains("run_started"), "{turn}");
        let finished = *audit.last().unwrap();
        assert!(lines[finished].contains("run_finished"), "{turn}");
        let first_line_after_the_run = lines[finished + 1..].first().copied().unwrap_or("");
        assert!(!first_line_after_the_run.starts_with("deskloop"), "output after the run finished:\n{turn}");
        for (i, line) in lines.iter().enumerate() {
            if let Some(call) = line.strip_prefix("deskloop calls ") {
                let tool = call.split(' ').next().unwrap();
                let next = audit.iter().find(|&&a| a > i).map(|&a| lines[a]).unwrap();
                assert!(next.contains(&format!(" {tool} (call")), "`{line}` is followed by `{next}`");
            }
        }
    }
}

#[test]
fn the_demo_removes_its_temporary_log_and_says_so_or_writes_where_it_is_told() {
    let (text, path) = demo_output(&["--demo"]);
    assert!(!path.exists(), "{} was left behind", path.display());
    assert!(text.contains(&format!("The audit log {} was removed", path.display())), "{text}");

    let dir = std::env::temp_dir().join(format!("deskloop-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let chosen = dir.join("demo.jsonl");
    let _ = std::fs::remove_file(&chosen);
    let (_, path) = demo_output(&["--demo", "--audit-log", chosen.to_str().unwrap()]);
    assert_eq!(path, chosen);
    let records = std::fs::read_to_string(&chosen).unwrap().lines().count();
    // An existing file is refused and left as it was.
    let mut out = Vec::new();
    let args = ["--demo".to_owned(), "--audit-log".to_owned(), chosen.to_str().unwrap().to_owned()];
    let err = main_with(&args, &mut out).unwrap_err();
    assert!(err.to_string().contains("exists"), "{err}");
    assert!(out.is_empty());
    assert_eq!(std::fs::read_to_string(&chosen).unwrap().lines().count(), records);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_options_are_refused_before_anything_starts() {
    for args in [&["mcp", "--htp"][..], &["--demo", "--keep"], &["--demo", "--audit-log"]] {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let mut out = Vec::new();
        let err = main_with(&args, &mut out).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{args:?}");
        assert!(err.to_string().contains("usage: helpdesk"), "{err}");
        assert!(out.is_empty());
    }
}

/// One question to the offline helpdesk: its answer and its events.
async fn ask(question: &str) -> (String, Vec<agents_runtime::events::Event>) {
    use agents_runtime::audit::MemorySink;
    use agents_runtime::{ConfirmMode, RunResultExt as _, Runtime};
    use examples::helpdesk::app::{HelpdeskModel, alex};
    use examples::helpdesk::knowledge::knowledge_settings;
    use examples::helpdesk::store::Store;
    use std::sync::Arc;
    let rt = Runtime::builder(Arc::new(MemorySink::new()), Arc::new(HelpdeskModel::new().provider()))
        .roles(examples::helpdesk::roles().clone())
        .confirm_mode(ConfirmMode::Conversational)
        .shared_state(Arc::new(Store::seeded()))
        .knowledge(knowledge_settings())
        .build();
    let mut run = rt.start::<DeskLoop>(alex(), "kn-ask", question.to_owned()).unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.events().recv().await {
        let done = matches!(e, agents_runtime::events::Event::Done { .. });
        events.push(e);
        if done {
            break;
        }
    }
    (run.wait().await.text().to_owned(), events)
}

#[tokio::test]
async fn the_helpdesk_answers_leave_and_probation_questions_from_its_policies_and_cites_them() {
    let (answer, events) = ask("How long is the probation period for a new hire?").await;
    assert!(answer.contains("90 calendar days"), "{answer}");
    assert!(answer.contains("(Source: the probation policy"), "{answer}");
    // The cited passage is one the run's evidence names.
    let cited = answer.rsplit("passage ").next().unwrap().trim_end_matches(".)");
    let named = events.iter().any(|e| match e {
        agents_runtime::events::Event::KnowledgeLoaded { passages, .. } => {
            passages.as_array().unwrap().iter().any(|p| p["chunk"] == cited)
        }
        _ => false,
    });
    assert!(named, "the cited passage {cited} is in the knowledge_loaded event");

    let (answer, _) = ask("How many unused days carry over into the next year?").await;
    assert!(answer.contains("Up to 5 unused days carry over"), "{answer}");
    assert!(answer.contains("(Source: the leave policy"), "{answer}");
}

#[tokio::test]
async fn the_labelled_questions_name_real_passages_and_retrieval_finds_them_offline() {
    use examples::helpdesk::recall::{K, knowledge_base, measure, resolved};
    let base = knowledge_base();
    let labelled = resolved(&base).unwrap();
    assert!(labelled.len() >= 20, "a set worth measuring");
    let r = measure(K).await.unwrap();
    for v in [r.lexical, r.hybrid, r.substring] {
        assert!((0.0..=1.0).contains(&v), "{r:?}");
    }
    // A floor on the offline default's quality (measured 0.958 when the set was written).
    assert!(r.lexical >= 0.9, "{r:?}");
}
