//! Kill a writer at random points and check what survives.
//!
//! The parent test re-runs this test binary as a child process (selecting the ignored
//! `crash_child` test) that appends records through [`JsonlSink`] from several tasks and,
//! after each `proposed` record's `append` resolved, performs a side effect: it appends
//! `<seq> <hash>` to a separate effects file. The parent kills the child with SIGKILL at a
//! random moment, then checks that the log verifies (a torn tail is accepted only as torn, and
//! after removing it the rest verifies) and that every side effect has its `proposed` record in
//! the log. The next child continues the same log.
//!
//! A process kill leaves the page cache intact, so this checks ordering (no effect without its
//! record) and recovery, not power-loss durability, which rests on the `fdatasync` per batch.

mod audit_common;

use agents_runtime::audit::{AuditRecord, AuditSink, AuditStatus, JsonlOpenError, JsonlSink, verify_jsonl_file};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const DIR_VAR: &str = "AGENTS_AUDIT_CRASH_DIR";
const ITERATION_VAR: &str = "AGENTS_AUDIT_CRASH_ITERATION";
const ITERATIONS: usize = 10;
const PRODUCERS: usize = 4;
/// Each child producer stops after this many calls, so a child that is never killed ends.
const CALLS_PER_PRODUCER: usize = 5_000;
/// Printed by the child once its first side effect is done (the test harness may print other
/// text on the same line).
const READY: &str = "AGENTS-CRASH-CHILD-READY";

fn log_path(dir: &Path) -> PathBuf {
    dir.join("audit.jsonl")
}

fn effects_path(dir: &Path) -> PathBuf {
    dir.join("effects.txt")
}

#[test]
fn killed_writers_leave_a_verifiable_log_and_no_effect_without_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(0xc4a5_4ed1);
    let mut torn_tails = 0;
    let mut effects_checked = 0;
    for iteration in 0..ITERATIONS {
        let stderr_path = dir.path().join(format!("child-{iteration}.stderr"));
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(DIR_VAR, dir.path())
            .env(ITERATION_VAR, iteration.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).unwrap())
            .spawn()
            .unwrap();
        // The child says it is ready once its first side effect is done, so every kill lands
        // while records and effects are being written.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let status = child.wait().unwrap();
                panic!(
                    "child {iteration} exited ({status}) before it was ready: {}",
                    std::fs::read_to_string(&stderr_path).unwrap()
                );
            }
            if line.contains(READY) {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(rng.gen_range(0..30_000)));
        match child.try_wait().unwrap() {
            // Finished all its calls before the kill: the checks below still apply.
            Some(status) => {
                assert!(status.success(), "child {iteration}: {}", std::fs::read_to_string(&stderr_path).unwrap())
            }
            None => {
                child.kill().unwrap();
                child.wait().unwrap();
            }
        }

        let log = log_path(dir.path());
        match verify_jsonl_file(&log, None) {
            Ok(_) => {}
            Err(JsonlOpenError::TornTail { line, .. }) => {
                let removed = JsonlSink::truncate_torn_tail(&log).unwrap().expect("a torn tail to remove");
                assert_eq!(removed.line, line);
                torn_tails += 1;
            }
            Err(other) => panic!("iteration {iteration}: {other}"),
        }
        let summary = verify_jsonl_file(&log, None).unwrap();
        let records: HashMap<u64, AuditRecord> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<AuditRecord>(l).unwrap())
            .map(|r| (r.seq, r))
            .collect();
        assert_eq!(records.len(), summary.records);

        let effects = std::fs::read_to_string(effects_path(dir.path())).unwrap();
        // Each effect is a single small `write` to a file opened for appending, which a kill
        // cannot cut; a line without its newline would still be an effect, so it is checked too.
        for effect in effects.lines() {
            let (seq, hash) = effect.split_once(' ').unwrap_or_else(|| panic!("malformed effect line {effect:?}"));
            let seq: u64 = seq.parse().unwrap();
            let record = records.get(&seq).unwrap_or_else(|| panic!("effect {effect} has no record in the log"));
            assert_eq!(record.hash, hash, "effect {effect} names another record");
            assert_eq!(record.status, AuditStatus::Proposed);
            effects_checked += 1;
        }
    }
    // Effects accumulate across iterations; each iteration adds at least one.
    assert!(effects_checked >= ITERATIONS, "{effects_checked}");
    eprintln!("{ITERATIONS} kills, {torn_tails} torn tails removed, {effects_checked} effect checks");
}

/// The child process of the test above; it runs only when selected with `--ignored` and the
/// crash directory in its environment.
#[test]
#[ignore = "the child process of killed_writers_leave_a_verifiable_log_and_no_effect_without_its_record"]
fn crash_child() {
    let dir = PathBuf::from(std::env::var_os(DIR_VAR).expect("run by the crash test, which sets the directory"));
    let iteration: usize = std::env::var(ITERATION_VAR).unwrap().parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    runtime.block_on(async move {
        let sink = Arc::new(JsonlSink::open(log_path(&dir)).expect("the parent leaves a verifiable log"));
        let effects = Arc::new(std::fs::OpenOptions::new().create(true).append(true).open(effects_path(&dir)).unwrap());
        let ready = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for producer in 0..PRODUCERS {
            let (sink, effects, ready) = (Arc::clone(&sink), Arc::clone(&effects), Arc::clone(&ready));
            tasks.push(tokio::spawn(async move {
                for i in 0..CALLS_PER_PRODUCER {
                    let n = (iteration * PRODUCERS + producer) * 1_000_000 + i;
                    let proposed = sink.append(audit_common::record(n, AuditStatus::Proposed)).await.unwrap();
                    // The side effect runs only after the proposed record is durable.
                    (&*effects).write_all(format!("{} {}\n", proposed.seq, proposed.hash).as_bytes()).unwrap();
                    if !ready.swap(true, Ordering::SeqCst) {
                        println!("{READY}");
                        std::io::stdout().flush().unwrap();
                    }
                    sink.append(audit_common::record(n, AuditStatus::Executed)).await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
}
