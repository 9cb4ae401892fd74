//! `agents audit ...` through the real binary, on crafted hash-chained logs.

use crate::common;

use agents_core::Tier;
use agents_core::audit::{AuditRecord, AuditStatus};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn log_file(dir: &Path, records: Vec<AuditRecord>) -> PathBuf {
    write(dir, "audit.jsonl", &seal_chain(records))
}

fn run(args: &[&str], path: &Path) -> std::process::Output {
    let mut a: Vec<std::ffi::OsString> = vec!["audit".into()];
    a.push(args[0].into());
    a.push(path.into());
    a.extend(args[1..].iter().map(Into::into));
    agents(a)
}

// ---- verify ----

#[test]
fn verify_accepts_a_good_chain() {
    let dir = tempdir();
    let log = log_file(dir.path(), normal_run());
    let o = run(&["verify"], &log);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let s = stdout(&o);
    assert!(s.starts_with("OK:") && s.contains("11 record(s), hash chain intact"), "{s}");
    assert!(s.contains(&format!("manifest {} on lines 1-11", manifest_hash())), "{s}");

    // With the manifest the records name.
    let m = fixture("helpdesk-v1.json");
    let o = run(&["verify", "--manifest", m.to_str().unwrap()], &log);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("every record names manifest"));

    let o = run(&["verify", "--json"], &log);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["ok"].clone(), v["records"].clone()), (Value::Bool(true), Value::from(11)));
}

#[test]
fn verify_reports_another_manifest_on_the_first_line() {
    let dir = tempdir();
    let log = log_file(dir.path(), normal_run());
    let m = fixture("helpdesk-v2.json");
    let o = run(&["verify", "--manifest", m.to_str().unwrap()], &log);
    assert_eq!(code(&o), 1);
    let s = stdout(&o);
    assert!(s.contains("first bad line is 1") && s.contains("is not the expected"), "{s}");
}

#[test]
fn verify_reports_a_record_without_a_manifest_hash() {
    let dir = tempdir();
    let mut records = normal_run();
    records[3].manifest_sha256 = "unknown".into();
    let log = log_file(dir.path(), records);
    let o = run(&["verify"], &log);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("first bad line is 4"), "{}", stdout(&o));
}

#[test]
fn verify_finds_an_edited_line() {
    let dir = tempdir();
    let text = seal_chain(normal_run());
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut v: Value = serde_json::from_str(&lines[5]).unwrap();
    v["args_hash"] = "forged".into();
    lines[5] = agents_core::canonical::to_string(&v);
    let log = write(dir.path(), "edited.jsonl", &(lines.join("\n") + "\n"));
    let o = run(&["verify"], &log);
    assert_eq!(code(&o), 1);
    let s = stdout(&o);
    assert!(s.contains("first bad line is 6") && s.contains("edited") && s.contains("Lines 1-5 verify"), "{s}");

    let o = run(&["verify", "--json"], &log);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"]["line"], 6);
    assert_eq!(v["error"]["kind"], "hash_mismatch");
}

#[test]
fn verify_finds_a_deleted_line() {
    let dir = tempdir();
    let text = seal_chain(normal_run());
    let lines: Vec<&str> = text.lines().filter(|l| !l.contains("\"seq\":4,")).collect();
    assert_eq!(lines.len(), 10);
    let log = write(dir.path(), "deleted.jsonl", &(lines.join("\n") + "\n"));
    let o = run(&["verify"], &log);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("first bad line is 4") && stdout(&o).contains("deleted"), "{}", stdout(&o));
}

#[test]
fn verify_reports_a_torn_last_line_as_torn() {
    let dir = tempdir();
    let text = seal_chain(normal_run());
    let cut = text.trim_end().len() - 40;
    let log = write(dir.path(), "torn.jsonl", &text[..cut]);
    let o = run(&["verify"], &log);
    assert_eq!(code(&o), 1);
    let s = stdout(&o);
    assert!(s.contains("first bad line is 11") && s.contains("torn"), "{s}");
    assert!(s.contains("Lines 1-10 are intact"), "{s}");
    let o = run(&["verify", "--json"], &log);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "torn_tail");

    // `show` and `stats` still work on the intact part, with a warning, and exit as `verify`
    // does: the chain is not whole.
    let o = run(&["show"], &log);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("line 11 is not an audit record and is skipped: torn"), "{}", stderr(&o));
    assert!(stdout(&o).contains("10 of 10 record(s)"), "{}", stdout(&o));
}

#[test]
fn clear_errors_for_missing_and_wrong_files() {
    let dir = tempdir();
    for sub in ["verify", "show", "stats"] {
        let o = run(&[sub], &dir.path().join("missing.jsonl"));
        assert_eq!(code(&o), 2);
        let e = stderr(&o);
        assert!(
            e.contains("cannot read audit log") && e.contains("missing.jsonl") && e.contains("no such file"),
            "{e}"
        );
    }
    let notes = write(dir.path(), "notes.txt", "hello\nworld\n");
    let o = run(&["verify"], &notes);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("is not an audit log: line 1 is not an audit record"), "{}", stderr(&o));

    let o = run(&["stats"], &fixture("helpdesk-v1.json"));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("is a permission manifest, not an audit log"), "{}", stderr(&o));

    let log = log_file(dir.path(), normal_run());
    let o = run(&["verify", "--manifest", log.to_str().unwrap()], &log);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("is an audit log, not a permission manifest"), "{}", stderr(&o));
}

#[test]
fn an_empty_log_verifies() {
    let dir = tempdir();
    let log = write(dir.path(), "empty.jsonl", "");
    let o = run(&["verify"], &log);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("0 record(s)"));
}

// ---- stats ----

fn stats_json(log: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["stats", "--json"];
    args.extend_from_slice(extra);
    let o = run(&args, log);
    (code(&o), serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o))))
}

fn severe_kinds(v: &Value) -> Vec<(String, u64)> {
    v["severe_failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["kind"].as_str().unwrap().to_owned(), s["line"].as_u64().unwrap()))
        .collect()
}

#[test]
fn stats_counts_by_tier_and_status_and_finds_nothing_severe_in_a_normal_run() {
    let dir = tempdir();
    let log = log_file(dir.path(), normal_run());
    let (c, v) = stats_json(&log, &[]);
    assert_eq!(c, 0);
    assert_eq!(v["records"], 11);
    assert_eq!(v["chain"]["ok"], true);
    assert_eq!(v["by_tier_status"]["action"]["executed"], 1);
    assert_eq!(v["by_tier_status"]["action"]["proposed"], 2);
    assert_eq!(v["by_tier_status"]["read"]["executed"], 1);
    assert_eq!(v["by_tier_status"]["read"]["denied"], 1);
    assert_eq!(v["by_tier_status"]["handoff"]["handed_off"], 1);
    assert_eq!(v["by_tier_status"]["none"]["run_started"], 1);
    assert!(severe_kinds(&v).is_empty());

    let o = run(&["stats"], &log);
    let s = stdout(&o);
    assert!(s.contains("hash chain: intact") && s.contains("severe failures: 0"), "{s}");
    assert!(s.contains("handed_off") && s.contains("total"), "{s}");
}

#[test]
fn stats_finds_an_action_executed_without_approval() {
    let dir = tempdir();
    let records = vec![
        call(AuditStatus::Proposed, "submit_leave", Tier::Action, "c1", "h1"),
        call(AuditStatus::Executed, "submit_leave", Tier::Action, "c1", "h1"),
    ];
    let (c, v) = stats_json(&log_file(dir.path(), records), &[]);
    assert_eq!(c, 1);
    assert_eq!(severe_kinds(&v), [("action_without_approval".to_owned(), 2)]);

    let o = run(&["stats"], &dir.path().join("audit.jsonl"));
    assert!(stdout(&o).contains("severe failures: 1") && stdout(&o).contains("line 2 (seq 2) run run-1 call c1"));
}

#[test]
fn stats_requires_the_approval_to_match_the_argument_hash() {
    let dir = tempdir();
    let records = vec![
        call(AuditStatus::Proposed, "submit_leave", Tier::Action, "c1", "h-3-days"),
        call(AuditStatus::Confirmed, "submit_leave", Tier::Action, "c1", "h-3-days"),
        call(AuditStatus::Executed, "submit_leave", Tier::Action, "c1", "h-5-days"),
    ];
    let (c, v) = stats_json(&log_file(dir.path(), records), &[]);
    assert_eq!(c, 1);
    assert_eq!(severe_kinds(&v), [("action_without_approval".to_owned(), 3)]);
    assert!(v["severe_failures"][0]["detail"].as_str().unwrap().contains("approval on line 2 was for h-3-days"));
}

#[test]
fn stats_uses_each_approval_once_and_only_in_its_run() {
    let dir = tempdir();
    let mut other_run = call(AuditStatus::Executed, "submit_leave", Tier::Action, "c1", "h1");
    other_run.run_id = "run-2".into();
    let records = vec![
        call(AuditStatus::Confirmed, "submit_leave", Tier::Action, "c1", "h1"),
        call(AuditStatus::Executed, "submit_leave", Tier::Action, "c1", "h1"),
        call(AuditStatus::Executed, "submit_leave", Tier::Action, "c1", "h1"),
        other_run,
    ];
    let (_, v) = stats_json(&log_file(dir.path(), records), &[]);
    assert_eq!(
        severe_kinds(&v),
        [("action_without_approval".to_owned(), 3), ("action_without_approval".to_owned(), 4)]
    );
}

#[test]
fn stats_flags_any_handoff_executed() {
    let dir = tempdir();
    let records = vec![
        call(AuditStatus::HandedOff, "reset_password", Tier::Handoff, "c1", "h1"),
        call(AuditStatus::Executed, "reset_password", Tier::Handoff, "c2", "h2"),
    ];
    let (c, v) = stats_json(&log_file(dir.path(), records), &[]);
    assert_eq!(c, 1);
    assert_eq!(severe_kinds(&v), [("handoff_executed".to_owned(), 2)]);
}

#[test]
fn stats_flags_a_denied_call_later_executed() {
    let dir = tempdir();
    // The same call id.
    let records = vec![
        call(AuditStatus::Denied, "get_leave_balance", Tier::Read, "c1", "h1"),
        call(AuditStatus::Executed, "get_leave_balance", Tier::Read, "c1", "h1"),
    ];
    let (c, v) = stats_json(&log_file(dir.path(), records), &[]);
    assert_eq!(c, 1);
    assert_eq!(severe_kinds(&v), [("denied_then_executed".to_owned(), 2)]);

    // A new call id for the same tool and arguments in the same run.
    let records = vec![
        call(AuditStatus::Denied, "get_leave_balance", Tier::Read, "c1", "h1"),
        call(AuditStatus::Proposed, "get_leave_balance", Tier::Read, "c2", "h1"),
        call(AuditStatus::Executed, "get_leave_balance", Tier::Read, "c2", "h1"),
        // Other arguments are not the denied call.
        call(AuditStatus::Executed, "get_leave_balance", Tier::Read, "c3", "h2"),
    ];
    let (_, v) = stats_json(&log_file(dir.path(), records), &[]);
    assert_eq!(severe_kinds(&v), [("denied_then_executed".to_owned(), 3)]);
}

#[test]
fn stats_with_a_manifest_uses_the_stricter_tier() {
    let dir = tempdir();
    // The record claims `read` for an action tool and no approval exists.
    let records = vec![
        call(AuditStatus::Proposed, "submit_leave", Tier::Read, "c1", "h1"),
        call(AuditStatus::Executed, "submit_leave", Tier::Read, "c1", "h1"),
    ];
    let log = log_file(dir.path(), records);
    let (c, v) = stats_json(&log, &[]);
    assert_eq!(c, 0, "from the records alone this is a read");
    assert!(severe_kinds(&v).is_empty());
    let m = fixture("helpdesk-v1.json");
    let (c, v) = stats_json(&log, &["--manifest", m.to_str().unwrap()]);
    assert_eq!(c, 1);
    assert_eq!(severe_kinds(&v), [("action_without_approval".to_owned(), 2)]);
    assert_eq!(v["tier_mismatches"].as_array().unwrap().len(), 2);
}

#[test]
fn stats_on_a_broken_chain_warns_and_still_counts() {
    let dir = tempdir();
    let text = seal_chain(normal_run());
    let edited = text.replacen("\"user_id\":\"u-42\"", "\"user_id\":\"u-43\"", 1);
    let log = write(dir.path(), "edited.jsonl", &edited);
    let o = run(&["stats"], &log);
    // A broken chain is a finding for every command, `stats` included.
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("hash chain: BROKEN"), "{}", stdout(&o));
    assert!(stderr(&o).contains("warning: the chain does not verify"), "{}", stderr(&o));
}

// ---- show ----

fn two_runs() -> Vec<AuditRecord> {
    let mut records = normal_run();
    let mut second = normal_run();
    for r in &mut second {
        r.run_id = "run-2".into();
        r.user_id = "u-7".into();
        r.ts = r.ts.replace("T10:", "T11:");
    }
    records.extend(second);
    records
}

fn show_json(log: &Path, filters: &[&str]) -> Vec<AuditRecord> {
    let mut args = vec!["show", "--json"];
    args.extend_from_slice(filters);
    let o = run(&args, log);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o).lines().map(|l| serde_json::from_str(l).expect("each line is a record")).collect()
}

#[test]
fn show_filters_by_run_user_tool_status_and_time() {
    let dir = tempdir();
    let log = log_file(dir.path(), two_runs());
    assert_eq!(show_json(&log, &[]).len(), 22);
    let run2 = show_json(&log, &["--run", "run-2"]);
    assert_eq!(run2.len(), 11);
    assert!(run2.iter().all(|r| r.run_id == "run-2"));
    assert_eq!(show_json(&log, &["--user", "u-42"]).len(), 11);
    let submit = show_json(&log, &["--tool", "submit_leave", "--run", "run-1"]);
    let statuses: Vec<AuditStatus> = submit.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]);
    assert_eq!(show_json(&log, &["--status", "executed,denied"]).len(), 6);
    assert_eq!(show_json(&log, &["--status", "executed", "--status", "denied", "--user", "u-7"]).len(), 3);
    assert_eq!(show_json(&log, &["--tier", "action"]).len(), 10);
    // Run 1 is at 10:00:00-10:00:50, run 2 at 11:00:00-11:00:50.
    let late = show_json(&log, &["--since", "2026-05-27T10:30:00Z"]);
    assert_eq!(late.len(), 11);
    assert!(late.iter().all(|r| r.run_id == "run-2"));
    assert_eq!(show_json(&log, &["--since", "2026-05-27T10:00:10Z", "--until", "2026-05-27T10:00:20Z"]).len(), 3);
    // 12:00 at +02:00 is 10:00Z: only the first record (the bound is inclusive).
    assert_eq!(show_json(&log, &["--until", "2026-05-27T12:00:00+02:00"]).len(), 1, "offsets are honoured");
    // JSON lines are the records as written, so they still verify individually.
    assert!(show_json(&log, &["--call", "c2"]).iter().all(|r| r.compute_hash() == r.hash));
}

#[test]
fn show_prints_a_table() {
    let dir = tempdir();
    let log = log_file(dir.path(), normal_run());
    let o = run(&["show", "--status", "denied"], &log);
    assert_eq!(code(&o), 0);
    let s = stdout(&o);
    let header = s.lines().next().unwrap();
    for col in ["seq", "ts", "run", "user", "role", "tool", "tier", "status", "call", "detail"] {
        assert!(header.split_whitespace().any(|h| h == col), "{header}");
    }
    assert!(s.contains("export_directory") && s.contains("is not available to role"), "{s}");
    assert!(s.contains("1 of 11 record(s)"), "{s}");
}

#[test]
fn show_says_values_omitted_for_records_that_keep_names_and_digests_only() {
    let dir = tempdir();
    let mut records = normal_run();
    let mac = |t: &[u8]| -> [u8; 32] {
        use sha2::Digest;
        sha2::Sha256::new().chain_update(b"key").chain_update(t).finalize().into()
    };
    let mut omitted = 0;
    for r in records.iter_mut().filter(|r| r.status == AuditStatus::Proposed) {
        let args = serde_json::json!({"employee_id": "emp-4417", "days": 3});
        r.args = Some(agents_core::audit::omit_args(&args, mac).into());
        omitted += 1;
    }
    assert!(omitted >= 2);
    let log = log_file(dir.path(), records);
    let o = run(&["show"], &log);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = stdout(&o);
    let rows: Vec<&str> = s.lines().filter(|l| l.contains("(values omitted)")).collect();
    assert_eq!(rows.len(), omitted, "{s}");
    assert!(rows.iter().all(|l| l.contains("proposed")), "{s}");
    assert!(s.contains(&format!("values omitted in {omitted} of them: the log keeps each argument's name")), "{s}");
    assert!(!s.contains("emp-4417"), "{s}");
    // A log written with values says nothing of the kind.
    let plain = log_file(dir.path(), normal_run());
    assert!(!stdout(&run(&["show"], &plain)).contains("values omitted"));
}

#[test]
fn show_refuses_unknown_statuses_and_bad_times() {
    let dir = tempdir();
    let log = log_file(dir.path(), normal_run());
    let o = run(&["show", "--status", "exploded"], &log);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("unknown status `exploded`") && stderr(&o).contains("handed_off"), "{}", stderr(&o));
    let o = run(&["show", "--since", "yesterday"], &log);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--since `yesterday` is not an RFC 3339 timestamp"), "{}", stderr(&o));
}

#[test]
fn show_names_the_server_tool_and_pins_of_an_imported_call_and_an_edited_pin_breaks_the_chain() {
    use agents_core::audit::AuditImport;
    let (pin, now) = ("1a2b3c4d5e6f".repeat(5) + "7a8b", "9f8e7d6c5b4a".repeat(5) + "3a2b");
    let import = AuditImport {
        server: "tracker".into(),
        source: Some("stdio: tracker-mcp --stdio".into()),
        tool: "create_issue".into(),
        sha256: pin.clone(),
        listed_sha256: None,
    };
    let mut records = normal_run();
    let mut ran = call(AuditStatus::Executed, "file_issue", Tier::Action, "c9", "h9");
    ran.import = Some(import.clone());
    let mut refused = call(AuditStatus::Failed, "file_issue", Tier::Action, "c10", "h10");
    refused.reason = Some("tool `file_issue` is unavailable: MCP server `tracker` changed ...".into());
    refused.import = Some(AuditImport { listed_sha256: Some(now.clone()), ..import });
    records.extend([ran, refused]);
    let dir = tempdir();
    let log = log_file(dir.path(), records);

    // The table leads an imported call's detail with the server, its tool and the pin(s).
    let o = run(&["show", "--tool", "file_issue"], &log);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("[mcp tracker:create_issue pin 1a2b3c4d5e6f]"), "{s}");
    assert!(s.contains("[mcp tracker:create_issue pin 1a2b3c4d5e6f -> 9f8e7d6c5b4a] tool `file_issue`"), "{s}");
    // The JSON lines carry the whole fields, and read back as written.
    let shown = show_json(&log, &["--tool", "file_issue"]);
    assert_eq!(shown[0].import.as_ref().unwrap().source.as_deref(), Some("stdio: tracker-mcp --stdio"));
    assert_eq!(shown[1].import.as_ref().unwrap().listed_sha256.as_deref(), Some(now.as_str()));
    assert!(shown.iter().all(|r| r.compute_hash() == r.hash));
    // Records without the field (every record of `normal_run`) are written without it.
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches("\"import\"").count(), 2, "{text}");
    let o = run(&["verify"], &log);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));

    // The pin is sealed with the record: changing it breaks the chain there.
    std::fs::write(&log, text.replacen(&pin, &"0".repeat(64), 1)).unwrap();
    let o = run(&["verify"], &log);
    assert_ne!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(format!("{}{}", stdout(&o), stderr(&o)).contains("line 12"), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn stats_reads_the_records_of_a_run_tree() {
    use agents_core::audit::AuditNode;
    let dir = tempdir();
    let place = |r: &mut AuditRecord, parent: Option<&str>, path: &str| {
        r.node = Some(AuditNode { parent_run_id: parent.map(str::to_owned), path: path.to_owned() });
    };
    let mut started = record(AuditStatus::RunStarted);
    place(&mut started, None, "kyc-pipeline");
    let mut node_started = record(AuditStatus::RunStarted);
    node_started.run_id = "run-2".into();
    place(&mut node_started, Some("run-1"), "kyc-pipeline/kyc-reviewer");
    let mut calls = vec![
        call(AuditStatus::Proposed, "submit_leave", Tier::Action, "c1", "h1"),
        call(AuditStatus::Confirmed, "submit_leave", Tier::Action, "c1", "h1"),
        call(AuditStatus::Executed, "submit_leave", Tier::Action, "c1", "h1"),
    ];
    for c in &mut calls {
        c.run_id = "run-2".into();
        place(c, Some("run-1"), "kyc-pipeline/kyc-reviewer");
    }
    let mut finished = record(AuditStatus::RunFinished);
    place(&mut finished, None, "kyc-pipeline");
    // A record of a single run before it, without `node`, in the same chain.
    let mut records = vec![record(AuditStatus::Notice), started, node_started];
    records.extend(calls);
    records.push(finished);
    let log = log_file(dir.path(), records);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.lines().next().unwrap().contains("\"node\""), "absent on a record outside a tree");
    assert!(text.contains(r#""node":{"parent_run_id":"run-1","path":"kyc-pipeline/kyc-reviewer"}"#), "{text}");
    let (c, v) = stats_json(&log, &[]);
    assert_eq!(c, 0, "{v}");
    assert_eq!(v["chain"]["ok"], true);
    assert_eq!(v["by_tier_status"]["action"]["executed"], 1);
    assert_eq!(v["by_tier_status"]["none"]["run_started"], 2);
    assert!(severe_kinds(&v).is_empty());
    // A node path changed after sealing breaks the chain.
    std::fs::write(&log, text.replace("kyc-pipeline/kyc-reviewer", "kyc-pipeline/kyc-decision")).unwrap();
    let (c, v) = stats_json(&log, &[]);
    assert_ne!(c, 0);
    assert_eq!(v["chain"]["ok"], false, "{v}");
}
