//! The JSONL verifier against 1,000 seeded random mutations of a valid log.
//!
//! A mutation is *detected* when the verifier returns an error, or when it returns a summary
//! (record count, last hash) that differs from the original's. The second case covers what no
//! chain can see from the inside: removing records at the end, or rewriting a suffix and
//! re-sealing it. Those are caught by comparing the summary with a head kept elsewhere (the
//! sink's last acknowledged record, a published checkpoint).
//!
//! Where the verifier returns an error, the reported line `r` is exactly the first line whose
//! content differs from the original, with one exception: a record inserted with a correct
//! seal (right `seq`, right `prev_hash`, right `hash`) is itself a valid continuation, so the
//! break becomes visible one line later, at the original record that no longer links. In every
//! case the lines before `r` form a valid chain, so `r` is the first line at which the log
//! cannot be a genuine chain.

use crate::audit_common;

use agents_runtime::audit::AuditStatus;
use agents_runtime::audit::{ChainError, ChainSummary, verify_jsonl_bytes};
use audit_common::{record, sealed_chain};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

const RECORDS: usize = 12;
const MUTATIONS: usize = 1000;

/// What the verifier must say about a mutated log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// An error reported on this 1-based line.
    ErrorAt(usize),
    /// No error, but a summary different from the original's.
    DifferentHead,
}

struct Log {
    lines: Vec<Vec<u8>>,
    hashes: Vec<String>,
}

impl Log {
    fn bytes(&self) -> Vec<u8> {
        self.lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect()
    }
}

fn mutate(rng: &mut StdRng, log: &Log) -> (&'static str, Vec<u8>, Expect) {
    let n = log.lines.len();
    let mut lines = log.lines.clone();
    match rng.gen_range(0..10) {
        0 => {
            // Replace one byte inside a line with a different byte (any value, newline included).
            let k = rng.gen_range(0..n);
            let p = rng.gen_range(0..lines[k].len());
            let mut b = rng.r#gen::<u8>();
            while b == lines[k][p] {
                b = rng.r#gen::<u8>();
            }
            lines[k][p] = b;
            ("edit byte", join(&lines), Expect::ErrorAt(k + 1))
        }
        1 => {
            // Replace a line's newline, joining it to the next line (or leaving it unterminated).
            let k = rng.gen_range(0..n);
            let mut bytes = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                bytes.extend_from_slice(line);
                bytes.push(if i == k { b"x ,}"[rng.gen_range(0..4)] } else { b'\n' });
            }
            ("edit newline", bytes, Expect::ErrorAt(k + 1))
        }
        2 => {
            let k = rng.gen_range(0..n);
            lines.remove(k);
            let expect = if k + 1 == n { Expect::DifferentHead } else { Expect::ErrorAt(k + 1) };
            ("delete line", join(&lines), expect)
        }
        3 => {
            let i = rng.gen_range(0..n - 1);
            let j = rng.gen_range(i + 1..n);
            lines.swap(i, j);
            ("swap lines", join(&lines), Expect::ErrorAt(i + 1))
        }
        4 => {
            let k = rng.gen_range(0..n);
            lines.insert(k + 1, lines[k].clone());
            ("duplicate line", join(&lines), Expect::ErrorAt(k + 2))
        }
        5 => {
            let k = rng.gen_range(0..=n);
            let garbage: &[u8] =
                [&b""[..], b"{}", b"null", b"{\"seq\":1}", b"  ", b"\r", b"not json"][rng.gen_range(0..7)];
            lines.insert(k, garbage.to_vec());
            ("insert garbage", join(&lines), Expect::ErrorAt(k + 1))
        }
        6 => {
            // A correctly sealed record slipped in between two genuine ones.
            let k = rng.gen_range(0..n);
            let prev = if k == 0 { agents_runtime::audit::GENESIS_HASH } else { log.hashes[k - 1].as_str() };
            let mut forged = record(1000 + k, AuditStatus::Executed);
            forged.seal(k as u64 + 1, prev);
            lines.insert(k, forged.to_line().into_bytes());
            ("insert sealed record", join(&lines), Expect::ErrorAt(k + 2))
        }
        7 => {
            let bytes = log.bytes();
            let t = rng.gen_range(0..bytes.len());
            let cut = &bytes[..t];
            let expect = if t == 0 || cut.ends_with(b"\n") {
                Expect::DifferentHead
            } else {
                Expect::ErrorAt(cut.iter().filter(|b| **b == b'\n').count() + 1)
            };
            ("truncate", cut.to_vec(), expect)
        }
        8 => {
            // Edit a record and re-seal it and everything after it: a valid chain with another head.
            let k = rng.gen_range(0..n);
            let mut prev =
                if k == 0 { agents_runtime::audit::GENESIS_HASH.to_owned() } else { log.hashes[k - 1].clone() };
            for (i, line) in lines.iter_mut().enumerate().skip(k) {
                let mut r: agents_runtime::audit::AuditRecord = serde_json::from_slice(line).unwrap();
                if i == k {
                    r.user_id = "u-mallory".into();
                }
                r.seal(i as u64 + 1, &prev);
                prev.clone_from(&r.hash);
                *line = r.to_line().into_bytes();
            }
            ("edit and re-seal suffix", join(&lines), Expect::DifferentHead)
        }
        _ => {
            // Re-encode a value without changing what it means.
            let k = rng.gen_range(0..n);
            let line = String::from_utf8(lines[k].clone()).unwrap();
            let options: [(&str, &str); 5] = [
                ("1e+21", "1E+21"),
                ("1e+21", "1e21"),
                ("1.5e-7", "15e-8"),
                (",0.5]", ",0.50]"),
                ("\"u-ann\"", "\"u-\\u0061nn\""),
            ];
            let (from, to) = options[rng.gen_range(0..options.len())];
            assert!(line.contains(from), "record {k} should contain {from}");
            lines[k] = line.replacen(from, to, 1).into_bytes();
            ("re-encode value", join(&lines), Expect::ErrorAt(k + 1))
        }
    }
}

fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect()
}

/// The first `lines` complete lines of `bytes`.
fn prefix_lines(bytes: &[u8], lines: usize) -> &[u8] {
    let mut end = 0;
    for _ in 0..lines {
        end += bytes[end..].iter().position(|b| *b == b'\n').unwrap() + 1;
    }
    &bytes[..end]
}

#[test]
fn every_mutation_is_detected_on_the_right_line() {
    let (records, text) = sealed_chain(RECORDS);
    let original = ChainSummary::plain(RECORDS, records[RECORDS - 1].hash.clone());
    assert_eq!(verify_jsonl_bytes(text.as_bytes(), None), Ok(original.clone()));
    let log = Log {
        lines: text.lines().map(|l| l.as_bytes().to_vec()).collect(),
        hashes: records.iter().map(|r| r.hash.clone()).collect(),
    };
    assert_eq!(log.bytes(), text.as_bytes());

    let mut rng = StdRng::seed_from_u64(0x5eed_a0d1);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for i in 0..MUTATIONS {
        let (kind, mutated, expect) = mutate(&mut rng, &log);
        *seen.entry(kind).or_default() += 1;
        let result = verify_jsonl_bytes(&mutated, None);
        let context = || format!("mutation {i} ({kind}): expected {expect:?}, got {result:?}");
        // The core verifier on text agrees with the byte verifier.
        if let Ok(text) = std::str::from_utf8(&mutated) {
            assert_eq!(agents_core::audit::verify_jsonl(text, None), result, "{}", context());
        }
        match (&result, expect) {
            (Err(error), Expect::ErrorAt(line)) => {
                assert_eq!(error.line(), line, "{}", context());
                let before = prefix_lines(&mutated, line - 1);
                assert!(
                    verify_jsonl_bytes(before, None).is_ok(),
                    "lines before the reported one must verify: {}",
                    context()
                );
                if kind == "insert sealed record"
                    || kind == "swap lines"
                    || kind == "delete line"
                    || kind == "duplicate line"
                {
                    assert!(matches!(error, ChainError::BrokenLink { .. }), "{}", context());
                }
            }
            (Ok(summary), Expect::DifferentHead) => assert_ne!(summary, &original, "{}", context()),
            _ => panic!("{}", context()),
        }
    }
    assert_eq!(seen.len(), 10, "every kind of mutation ran: {seen:?}");
    assert!(seen.values().all(|count| *count >= 50), "{seen:?}");
}
