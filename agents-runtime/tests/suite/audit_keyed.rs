//! The keyed chain against someone who can write the log: 10^4 random mutations of a keyed log
//! (edit, insert, delete, reorder, truncate, re-chain with the plain hash, re-seal with another
//! key, replay of another log's records) are all detected by a verifier that holds the chain
//! key and the published checkpoints; with the key of epoch `k`, every forgery of a record
//! sealed before epoch `k` is detected; a log cut below the last checkpoint is detected.

use crate::audit_common;

use agents_runtime::agents_core::audit::unix_seconds;
use agents_runtime::audit::{
    AuditRecord, AuditSink, AuditStatus, ChainError, ChainKey, ChainOptions, ChainSummary, ChainVerifier, Checkpoint,
    CheckpointFile, CheckpointSigningKey, CheckpointVerifyingKey, Checkpoints, EpochKey, EpochPolicy, JsonlSink,
    SealCheck, SealingKey,
};
use audit_common::record;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::path::Path;

const RECORDS: usize = 16;
/// Four records per epoch (the hour never runs out in a test), so the log spans epochs 0-3.
const POLICY: EpochPolicy = EpochPolicy { records: 4, seconds: 3600 };

fn now() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap()
}

/// A keyed log written by a real sink, its checkpoints (every 8 records and at close).
struct Log {
    lines: Vec<String>,
    checkpoints: Vec<Checkpoint>,
}

async fn keyed_log(dir: &Path, name: &str, chain_key: &ChainKey, signer: [u8; 32]) -> Log {
    let path = dir.join(format!("{name}.jsonl"));
    let published = dir.join(format!("{name}.checkpoints"));
    let options = ChainOptions {
        key: Some(SealingKey::in_memory(chain_key.epoch_key(), POLICY)),
        checkpoints: Some(Checkpoints::new(
            CheckpointSigningKey::from_bytes(signer),
            CheckpointFile::open(&published).unwrap(),
            8,
        )),
    };
    let sink = JsonlSink::open_with(&path, options).unwrap();
    for i in 0..RECORDS {
        let mut r = record(i, [AuditStatus::Proposed, AuditStatus::Executed][i % 2]);
        r.ts = now();
        let sealed = sink.append(r).await.unwrap();
        assert_eq!(sealed.epoch, Some(i as u64 / 4));
    }
    drop(sink);
    let text = std::fs::read_to_string(&path).unwrap();
    let checkpoints =
        std::fs::read_to_string(&published).unwrap().lines().map(|l| Checkpoint::parse(l).unwrap()).collect();
    Log { lines: text.lines().map(str::to_owned).collect(), checkpoints }
}

fn join(lines: &[String]) -> Vec<u8> {
    lines.iter().flat_map(|l| l.bytes().chain([b'\n'])).collect()
}

/// What `agents audit verify --key --checkpoints` does, on bytes.
fn verify(
    bytes: &[u8],
    key: Option<&ChainKey>,
    checkpoints: &[Checkpoint],
    trusted: &CheckpointVerifyingKey,
) -> Result<ChainSummary, ChainError> {
    // Signatures are checked once per checkpoint file (here: where the log is written), so the
    // mutation loops spend their time on the chain.
    let _ = trusted;
    let mut v = ChainVerifier::new().epochs(POLICY).checkpoints(checkpoints.iter().cloned());
    if let Some(key) = key {
        v = v.key(key);
    }
    let ends = bytes.is_empty() || bytes.ends_with(b"\n");
    let parts: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let n = if ends { parts.len() - 1 } else { parts.len() };
    for (i, part) in parts[..n].iter().enumerate() {
        if i + 1 == n && !ends {
            return Err(ChainError::TornTail { line: i + 1 });
        }
        let text =
            std::str::from_utf8(part).map_err(|e| ChainError::Malformed { line: i + 1, detail: e.to_string() })?;
        v.line(text, i + 1)?;
    }
    v.finish()
}

fn parse(line: &str) -> AuditRecord {
    serde_json::from_str(line).unwrap()
}

/// Re-seals records `from..` after editing, with `seal` choosing how, keeping the chain linked.
fn rechain(lines: &mut [String], from: usize, seal: &dyn Fn(&mut AuditRecord, u64, &str)) {
    let mut prev =
        if from == 0 { agents_runtime::audit::GENESIS_HASH.to_owned() } else { parse(&lines[from - 1]).hash };
    for (i, line) in lines.iter_mut().enumerate().skip(from) {
        let mut r = parse(line);
        seal(&mut r, i as u64 + 1, &prev);
        prev = r.hash.clone();
        *line = r.to_line();
    }
}

fn edit(rng: &mut StdRng, line: &str) -> String {
    let mut v: Value = serde_json::from_str(line).unwrap();
    let field = ["reason", "user_id", "tool", "status", "args", "ts", "manifest_sha256"][rng.gen_range(0..7)];
    v[field] = match field {
        "status" => Value::from("confirmed"),
        "args" => serde_json::json!({"patient": "p-forged"}),
        "ts" => Value::from("2026-01-01T00:00:00Z"),
        _ => Value::from(format!("forged-{}", rng.r#gen::<u32>())),
    };
    agents_runtime::agents_core::canonical::to_string(&v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_mutations_of_a_keyed_log_are_all_detected() {
    let dir = tempfile::tempdir().unwrap();
    let key = ChainKey::from_bytes([42; 32]);
    let signer = [7; 32];
    let trusted = CheckpointSigningKey::from_bytes(signer).verifying_key();
    let log = keyed_log(dir.path(), "a", &key, signer).await;
    // Another log under the same chain key and signer: its records are genuine, just not these.
    let other = keyed_log(dir.path(), "b", &key, signer).await;
    for c in log.checkpoints.iter().chain(&other.checkpoints) {
        c.verify(&trusted).unwrap();
    }
    let original = join(&log.lines);
    let summary = verify(&original, Some(&key), &log.checkpoints, &trusted).unwrap();
    assert_eq!(summary.seals, SealCheck::Keyed { last_epoch: 3 });
    assert_eq!(summary.checkpoints, Some((2, RECORDS as u64)));
    assert_eq!(summary.guarantee(), "keyed through epoch 3; matches checkpoint 2 (record 16)");

    let wrong_key = ChainKey::from_bytes([43; 32]);
    let mut rng = StdRng::seed_from_u64(14);
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for _ in 0..10_000 {
        let n = log.lines.len();
        let mut lines = log.lines.clone();
        let (kind, bytes) = match rng.gen_range(0..9) {
            0 => {
                let k = rng.gen_range(0..n);
                lines[k] = edit(&mut rng, &lines[k]);
                ("edit a field", join(&lines))
            }
            1 => {
                let mut bytes = original.clone();
                let p = rng.gen_range(0..bytes.len());
                bytes[p] ^= rng.gen_range(1..=255u8);
                ("flip a byte", bytes)
            }
            2 => {
                let (from, at) = (rng.gen_range(0..n), rng.gen_range(0..=n));
                let copy = lines[from].clone();
                lines.insert(at, copy);
                ("insert a copy", join(&lines))
            }
            3 => {
                lines.remove(rng.gen_range(0..n));
                ("delete", join(&lines))
            }
            4 => {
                let i = rng.gen_range(0..n - 1);
                let j = rng.gen_range(i + 1..n);
                lines.swap(i, j);
                ("reorder", join(&lines))
            }
            5 => ("truncate", original[..rng.gen_range(0..original.len())].to_vec()),
            6 => {
                let k = rng.gen_range(0..n);
                lines[k] = edit(&mut rng, &lines[k]);
                rechain(&mut lines, k, &|r, seq, prev| r.seal(seq, prev));
                ("re-chain with the plain hash", join(&lines))
            }
            7 => {
                let k = rng.gen_range(0..n);
                lines[k] = edit(&mut rng, &lines[k]);
                rechain(&mut lines, k, &|r, seq, prev| {
                    let epoch = (seq - 1) / POLICY.records;
                    r.seal_keyed(seq, prev, &wrong_key.key_at(epoch));
                });
                ("re-seal with another key", join(&lines))
            }
            _ => {
                let i = rng.gen_range(0..n);
                let j = rng.gen_range(i..n);
                lines[i..=j].clone_from_slice(&other.lines[i..=j]);
                ("replay another log's records", join(&lines))
            }
        };
        if bytes == original {
            continue;
        }
        *kinds.entry(kind).or_default() += 1;
        assert!(
            verify(&bytes, Some(&key), &log.checkpoints, &trusted).is_err(),
            "{kind} was not detected:\n{}",
            String::from_utf8_lossy(&bytes)
        );
    }
    assert_eq!(kinds.len(), 9, "{kinds:?}");
    assert!(kinds.values().sum::<usize>() > 9_900, "{kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_key_of_epoch_k_no_record_of_an_earlier_epoch_can_be_forged() {
    let dir = tempfile::tempdir().unwrap();
    let key = ChainKey::from_bytes([5; 32]);
    let signer = [6; 32];
    let trusted = CheckpointSigningKey::from_bytes(signer).verifying_key();
    let log = keyed_log(dir.path(), "k", &key, signer).await;
    let last_epoch = (RECORDS as u64 - 1) / POLICY.records;
    let mut tried = 0;
    for k in 1..=last_epoch + 1 {
        // The thief's key, and every later one they can compute from it.
        let stolen = key.key_at(k);
        let later = |epoch: u64| {
            let mut key = EpochKey::new(stolen.epoch(), *stolen.key_bytes());
            key.advance_to(epoch.max(k));
            key
        };
        for j in 0..RECORDS {
            if parse(&log.lines[j]).epoch.unwrap() >= k {
                continue;
            }
            // (a) Edit record j and seal it with a key the thief has, keeping its place and
            // time, and re-seal everything after it (the epochs they can reach).
            for claimed in [None, Some(k), Some(k + 3)] {
                let mut lines = log.lines.clone();
                let mut r = parse(&lines[j]);
                r.reason = Some("forged".to_owned());
                lines[j] = r.to_line();
                rechain(&mut lines, j, &|r, seq, prev| {
                    let own = r.epoch.unwrap();
                    let epoch = claimed.map_or(own.max(k), |c| c.max(own));
                    r.seal_keyed(seq, prev, &later(epoch));
                });
                tried += 1;
                let err = verify(&join(&lines), Some(&key), &[], &trusted).unwrap_err();
                assert!(matches!(err, ChainError::Epoch { .. } | ChainError::SealMismatch { .. }), "{err}");
                assert_eq!(err.line(), j + 1, "{err}");
            }
            // (b) Cut the log back to record j and append records dated after the theft, so
            // their epochs are the thief's: a valid chain on its own (the documented limit of
            // the chain alone), caught by a checkpoint published before the theft.
            let mut lines = log.lines.clone();
            let ts = unix_seconds(&parse(&lines[j]).ts).unwrap() + 3600 * k as i64;
            let forged_ts = rfc3339(ts);
            let first = unix_seconds(&parse(&lines[0]).ts).unwrap();
            rechain(&mut lines, j, &|r, seq, prev| {
                r.ts.clone_from(&forged_ts);
                r.reason = Some("forged".to_owned());
                r.seal_keyed(seq, prev, &later(POLICY.epoch_of(seq, ts, first)));
            });
            tried += 1;
            let alone = verify(&join(&lines), Some(&key), &[], &trusted);
            if j == 0 {
                // The first record is always of epoch 0, whose key the thief lacks.
                assert!(alone.is_err());
                continue;
            }
            if let Err(e) = alone {
                panic!("the documented limit moved: {e}");
            }
            let published: Vec<Checkpoint> =
                log.checkpoints.iter().filter(|c| c.epoch.unwrap() < k && c.seq > j as u64).cloned().collect();
            if published.is_empty() {
                continue;
            }
            let err = verify(&join(&lines), Some(&key), &published, &trusted).unwrap_err();
            assert!(matches!(err, ChainError::CheckpointMismatch { .. }), "{err}");
        }
    }
    assert!(tried > 100, "{tried}");
}

fn rfc3339(ts: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(ts)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_cut_below_the_last_checkpoint_is_detected_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let key = ChainKey::from_bytes([9; 32]);
    let signer = [10; 32];
    let trusted = CheckpointSigningKey::from_bytes(signer).verifying_key();
    let log = keyed_log(dir.path(), "t", &key, signer).await;
    for keep in 0..RECORDS {
        let err = verify(&join(&log.lines[..keep]), Some(&key), &log.checkpoints, &trusted).unwrap_err();
        let ChainError::Truncated { records, seq, .. } = err else { panic!("{err}") };
        assert_eq!((records, seq), (keep as u64, if keep < 8 { 8 } else { 16 }));
    }
    // Without checkpoints the same cut log verifies: the chain alone cannot see a cut end.
    assert!(verify(&join(&log.lines[..5]), Some(&key), &[], &trusted).is_ok());
    // A checkpoint signed by another key is refused before it is used.
    let forged = Checkpoint::sign(5, "00", None, "2026-01-01T00:00:00Z", &CheckpointSigningKey::from_bytes([1; 32]));
    assert!(forged.verify(&trusted).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_key_only_links_are_checked_and_the_verifier_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let key = ChainKey::from_bytes([3; 32]);
    let log = keyed_log(dir.path(), "n", &key, [4; 32]).await;
    let trusted = CheckpointSigningKey::from_bytes([4; 32]).verifying_key();
    let summary = verify(&join(&log.lines), None, &[], &trusted).unwrap();
    assert_eq!(summary.seals, SealCheck::KeyedUnchecked { last_epoch: 3 });
    assert!(summary.guarantee().starts_with("links only"), "{}", summary.guarantee());
    // The wrong key: the first record's seal fails.
    let err = verify(&join(&log.lines), Some(&ChainKey::from_bytes([2; 32])), &[], &trusted).unwrap_err();
    assert_eq!(err, ChainError::SealMismatch { line: 1 });
    // A plain log verified with a key: refused as not keyed.
    let (_, plain) = audit_common::sealed_chain(3);
    let err = verify(plain.as_bytes(), Some(&key), &[], &trusted).unwrap_err();
    assert!(matches!(err, ChainError::ModeMismatch { line: 1, .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_file_holds_only_the_current_key_and_a_reopened_writer_continues() {
    let dir = tempfile::tempdir().unwrap();
    let key = ChainKey::from_bytes([11; 32]);
    let key_path = dir.path().join("audit.key");
    let log_path = dir.path().join("audit.jsonl");
    SealingKey::create_file(&key_path, &key, POLICY).unwrap();
    for round in 0..3u64 {
        let sealing = SealingKey::open_file(&key_path, POLICY).unwrap();
        let sink = JsonlSink::open_with(&log_path, ChainOptions { key: Some(sealing), checkpoints: None }).unwrap();
        for i in 0..6 {
            let mut r = record(i, AuditStatus::Proposed);
            r.ts = now();
            sink.append(r).await.unwrap();
        }
        drop(sink);
        // 6 records per round, 4 per epoch: after the round the writer holds the next record's
        // epoch's key, and the file holds exactly that key, none before it.
        let written = (round + 1) * 6;
        let file = std::fs::read_to_string(&key_path).unwrap();
        let held = written / POLICY.records;
        assert!(file.contains(&hex::encode(key.key_at(held).key_bytes())), "{file}");
        for earlier in 0..held {
            assert!(!file.contains(&hex::encode(key.key_at(earlier).key_bytes())));
        }
    }
    let text = std::fs::read(&log_path).unwrap();
    let trusted = CheckpointSigningKey::from_bytes([0; 32]).verifying_key();
    let summary = verify(&text, Some(&key), &[], &trusted).unwrap();
    assert_eq!(summary.records, 18);
    // A plain sink refuses the keyed log, and a keyed sink a plain one.
    assert!(JsonlSink::open(&log_path).is_err());
    let plain = dir.path().join("plain.jsonl");
    std::fs::write(&plain, audit_common::sealed_chain(2).1).unwrap();
    let sealing = SealingKey::in_memory(key.epoch_key(), POLICY);
    assert!(JsonlSink::open_with(&plain, ChainOptions { key: Some(sealing), checkpoints: None }).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_writer_steps_its_key_when_the_epoch_time_is_over() {
    let dir = tempfile::tempdir().unwrap();
    let key = ChainKey::from_bytes([12; 32]);
    let key_path = dir.path().join("audit.key");
    // One-second epochs (below the documented minimum, for the test's sake).
    let policy = EpochPolicy { records: 1000, seconds: 1 };
    SealingKey::create_file(&key_path, &key, policy).unwrap();
    let sealing = SealingKey::open_file(&key_path, policy).unwrap();
    let sink = JsonlSink::open_with(dir.path().join("a.jsonl"), ChainOptions { key: Some(sealing), checkpoints: None })
        .unwrap();
    let mut r = record(0, AuditStatus::Proposed);
    r.ts = now();
    sink.append(r).await.unwrap();
    let epoch_in_file = || {
        let text = std::fs::read_to_string(&key_path).unwrap();
        text.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap()
    };
    assert_eq!(epoch_in_file(), 0);
    // No record comes; the writer wakes and steps once the grace after the epoch has passed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
    while epoch_in_file() == 0 {
        assert!(std::time::Instant::now() < deadline, "the idle writer never stepped its key");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // A record stamped long before it reaches the writer is refused: its epoch's key is gone.
    let mut stale = record(1, AuditStatus::Proposed);
    stale.ts = "2000-01-01T00:00:00Z".to_owned();
    let err = sink.append(stale).await.unwrap_err();
    assert!(err.to_string().contains("already erased"), "{err}");
    drop(sink);
}
