//! `agents audit verify|show|stats` on hostile and damaged input: each refused or reported with
//! a clear message and the right exit code, in bounded memory (peak RSS measured with
//! `/usr/bin/time -v`, under 64 MB). Also `recover`, SQLite logs and keyed logs.

use crate::common;

use agents_core::audit::{AuditRecord, AuditStatus, ChainKey, Checkpoint, CheckpointSigningKey, GENESIS_HASH};
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const COMMANDS: [&str; 3] = ["verify", "show", "stats"];
const RSS_LIMIT_KB: u64 = 64 * 1024;

/// Runs `agents audit <sub> <log> <extra>` under `/usr/bin/time -v`; the output and the peak
/// RSS in kB. Fails loudly when the tool is missing (`cargo xtask setup` installs it).
fn measured(sub: &str, log: &Path, extra: &[&str]) -> (Output, u64) {
    let time = Path::new("/usr/bin/time");
    assert!(
        time.exists(),
        "/usr/bin/time is missing: run `cargo xtask setup` (or `cargo xtask test`), which installs it, or `apt-get install -y time`"
    );
    let o = Command::new(time)
        .arg("-v")
        .arg(env!("CARGO_BIN_EXE_agents"))
        .args(["audit", sub])
        .arg(log)
        .args(extra)
        .output()
        .unwrap();
    let err = stderr(&o);
    let rss = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes): "))
        .unwrap_or_else(|| panic!("no RSS in: {err}"))
        .parse()
        .unwrap();
    (o, rss)
}

fn base_record() -> AuditRecord {
    let mut r = record(AuditStatus::Notice);
    r.reason = Some("a record of the bulk log".to_owned());
    r
}

/// A valid plain log of `n` records, written as it is sealed.
fn write_log(path: &Path, n: usize) -> Vec<u8> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut prev = GENESIS_HASH.to_owned();
    let base = base_record();
    let mut last = Vec::new();
    for i in 0..n {
        let mut r = base.clone();
        r.seal(i as u64 + 1, &prev);
        prev.clone_from(&r.hash);
        last = r.to_line().into_bytes();
        out.write_all(&last).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
    last
}

fn check_all(log: &Path, extra: &[&str], want_code: i32, want_message: &str) {
    for sub in COMMANDS {
        let (o, rss) = measured(sub, log, extra);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert_eq!(code(&o), want_code, "{sub} on {}: {all}", log.display());
        assert!(all.contains(want_message), "{sub}: expected {want_message:?} in:\n{all}");
        assert!(rss < RSS_LIMIT_KB, "{sub} on {}: peak RSS {rss} kB", log.display());
    }
}

#[test]
fn dev_zero_is_refused_as_not_a_regular_file() {
    check_all(Path::new("/dev/zero"), &[], 2, "is not a regular file");
}

#[test]
fn a_1_gb_sparse_file_is_refused_at_its_first_line() {
    let dir = tempdir();
    let path = dir.path().join("sparse.jsonl");
    std::fs::File::create(&path).unwrap().set_len(1 << 30).unwrap();
    check_all(&path, &[], 2, "line 1 is longer than 1048576 bytes");
}

#[test]
fn a_100_mb_line_is_refused_with_its_number_and_the_limit_is_a_setting() {
    let dir = tempdir();
    let path = dir.path().join("long.jsonl");
    write_log(&path, 3);
    // Line 4: 100 MB (a hole in the file reads as zero bytes), then a newline.
    let file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(len + 100_000_000).unwrap();
    (&file).write_all(b"\n").unwrap();
    check_all(&path, &[], 2, "line 4 is longer than 1048576 bytes");
    let o = agents(["audit", "verify", path.to_str().unwrap(), "--max-line-bytes", "64"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("line 1 is longer than 64 bytes") && stderr(&o).contains("--max-line-bytes"));
}

#[test]
fn invalid_utf8_on_line_70000_is_reported_with_its_line_number() {
    let dir = tempdir();
    let path = dir.path().join("utf8.jsonl");
    let last = write_log(&path, 69_999);
    let mut bad = last.clone();
    bad[10] = 0xff;
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(&bad).unwrap();
    f.write_all(b"\n").unwrap();
    drop(f);
    let (o, rss) = measured("verify", &path, &[]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("first bad line is 70000") && stdout(&o).contains("not UTF-8"), "{}", stdout(&o));
    assert!(rss < RSS_LIMIT_KB, "peak RSS {rss} kB");
    assert!(stderr(&o).contains("read 69999 record(s)"), "{}", stderr(&o));
    for sub in ["show", "stats"] {
        let (o, rss) = measured(sub, &path, &["--json"]);
        assert_eq!(code(&o), 1);
        assert!(stderr(&o).contains("line 70000 is not an audit record and is skipped: not UTF-8"), "{}", stderr(&o));
        assert!(rss < RSS_LIMIT_KB, "{sub}: peak RSS {rss} kB");
    }
}

#[test]
fn recover_copies_up_to_a_torn_tail_and_leaves_the_log_alone() {
    let dir = tempdir();
    let path = dir.path().join("crashed.jsonl");
    write_log(&path, 5);
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"agent\":\"a\",\"ar").unwrap();
    drop(f);
    let before = std::fs::read(&path).unwrap();
    let new = dir.path().join("recovered.jsonl");
    let o = agents(["audit", "recover", path.to_str().unwrap(), "--out", new.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("copied 5 record(s)") && s.contains("dropped 1 line(s), 16 bytes, from line 6 on"), "{s}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the original changed");
    let o = agents(["audit", "verify", new.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    // It never overwrites.
    let o = agents(["audit", "recover", path.to_str().unwrap(), "--out", new.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    // A corrupt middle line: everything before it is kept.
    let text = String::from_utf8(std::fs::read(&new).unwrap()).unwrap();
    let edited = text.replacen("bulk log", "bulk lot", 1);
    let corrupt = dir.path().join("corrupt.jsonl");
    std::fs::write(&corrupt, edited).unwrap();
    let out = dir.path().join("c2.jsonl");
    let o = agents(["audit", "recover", corrupt.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("copied 0 record(s)") && stdout(&o).contains("dropped 5 line(s)"), "{}", stdout(&o));
}

fn sqlite_log(dir: &Path) -> PathBuf {
    let path = dir.join("audit.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE audit_log (seq INTEGER PRIMARY KEY, ts TEXT NOT NULL, run_id TEXT NOT NULL, session_id TEXT NOT NULL, \
         request_id TEXT NOT NULL, call_id TEXT, user_id TEXT NOT NULL, org_id TEXT NOT NULL, role TEXT NOT NULL, agent TEXT NOT NULL, \
         tool TEXT, tier TEXT, status TEXT NOT NULL, reason TEXT, title TEXT, args TEXT, args_hash TEXT, result TEXT, \
         manifest_sha256 TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL, epoch INTEGER) STRICT",
    )
    .unwrap();
    let mut prev = GENESIS_HASH.to_owned();
    for (i, mut r) in normal_run().into_iter().enumerate() {
        r.seal(i as u64 + 1, &prev);
        prev.clone_from(&r.hash);
        conn.execute(
            "INSERT INTO audit_log VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,NULL)",
            rusqlite::params![
                r.seq as i64,
                r.ts,
                r.run_id.as_str(),
                r.session_id.as_str(),
                r.request_id.as_str(),
                r.call_id.as_deref(),
                r.user_id.as_str(),
                r.org_id.as_str(),
                r.role.as_str(),
                r.agent.as_str(),
                r.tool.as_deref(),
                r.tier.map(|t| t.as_str()),
                r.status.as_str(),
                r.reason,
                r.title.as_deref(),
                r.args.as_deref().map(agents_core::canonical::to_string),
                r.args_hash,
                r.result.as_ref().map(|x| agents_core::canonical::to_string(&x.to_value())),
                r.manifest_sha256.as_str(),
                r.prev_hash,
                r.hash,
            ],
        )
        .unwrap();
    }
    path
}

#[test]
fn sqlite_logs_are_read_by_every_command() {
    let dir = tempdir();
    let db = sqlite_log(dir.path());
    for sub in COMMANDS {
        let o = agents(["audit", sub, db.to_str().unwrap()]);
        assert_eq!(code(&o), 0, "{sub}: {}{}", stdout(&o), stderr(&o));
    }
    assert!(stdout(&agents(["audit", "verify", db.to_str().unwrap()])).contains("11 record(s), hash chain intact"));
    // A row changed behind the triggers: found, exit 1 for all three.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE audit_log SET user_id = 'u-forged' WHERE seq = 4", []).unwrap();
    drop(conn);
    for sub in COMMANDS {
        let o = agents(["audit", sub, db.to_str().unwrap()]);
        assert_eq!(code(&o), 1, "{sub}: {}{}", stdout(&o), stderr(&o));
    }
    assert!(stdout(&agents(["audit", "verify", db.to_str().unwrap()])).contains("first bad line is 4"));
}

#[test]
fn a_keyed_log_says_which_guarantee_was_checked() {
    let dir = tempdir();
    let key = ChainKey::from_bytes([21; 32]);
    let signer = CheckpointSigningKey::from_bytes([22; 32]);
    let mut prev = GENESIS_HASH.to_owned();
    let mut text = String::new();
    let records = normal_run();
    let n = records.len() as u64;
    for (i, mut r) in records.into_iter().enumerate() {
        // One timestamp: epochs follow the records (2 per epoch here).
        r.ts = "2026-05-27T10:00:00Z".to_owned();
        let seq = i as u64 + 1;
        r.seal_keyed(seq, &prev, &key.key_at((seq - 1) / 2));
        prev.clone_from(&r.hash);
        text.push_str(&r.to_line());
        text.push('\n');
    }
    let log = write(dir.path(), "keyed.jsonl", &text);
    let key_file = write(dir.path(), "chain.key", &format!("{}\n", *key.to_hex()));
    let cps = write(
        dir.path(),
        "cps.jsonl",
        &format!("{}\n", Checkpoint::sign(n, &prev, Some((n - 1) / 2), "2026-05-27T10:00:01Z", &signer).to_line()),
    );
    let public = signer.verifying_key().to_hex();
    let keyed = ["--key", key_file.to_str().unwrap(), "--epoch-records", "2"];
    let o = agents(["audit", "verify", log.to_str().unwrap()]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("guarantee: links only"), "{}", stdout(&o));
    let mut args = vec!["audit", "verify", log.to_str().unwrap()];
    args.extend(keyed);
    let o = agents(&args);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("guarantee: keyed through epoch 5; no checkpoint"), "{}", stdout(&o));
    args.extend(["--checkpoints", cps.to_str().unwrap(), "--checkpoint-key", &public]);
    let o = agents(&args);
    assert!(
        stdout(&o).contains("guarantee: keyed through epoch 5; matches checkpoint 1 (record 11)"),
        "{}",
        stdout(&o)
    );
    // Cut off the last record: the checkpoint names it.
    let cut: String = text.lines().take(10).map(|l| format!("{l}\n")).collect();
    let short = write(dir.path(), "short.jsonl", &cut);
    args[2] = short.to_str().unwrap();
    let o = agents(&args);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("records were cut off the end"), "{}", stdout(&o));
    // The wrong key: tampering, exit 1; a key file that is not a key: exit 2.
    let wrong = write(dir.path(), "wrong.key", &"ab".repeat(32));
    let o = agents(["audit", "stats", log.to_str().unwrap(), "--key", wrong.to_str().unwrap(), "--epoch-records", "2"]);
    assert_eq!(code(&o), 1);
    let o = agents(["audit", "show", log.to_str().unwrap(), "--key", cps.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not an audit chain key"), "{}", stderr(&o));
}
