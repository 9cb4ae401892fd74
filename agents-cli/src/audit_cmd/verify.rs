//! `agents audit verify`.

use super::source::{self, AfterBreak};
use super::{ChainArgs, chain_code, emit};
use crate::error::CmdResult;
use crate::load;
use crate::term::{self, esc};
use agents_core::audit::{ChainError, ChainSummary};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;

/// A run of consecutive records naming one manifest.
struct ManifestSpan {
    sha256: String,
    first_line: usize,
    last_line: usize,
    records: usize,
}

/// At most this many spans are listed (a log whose manifest changes more often than this is
/// itself worth a look).
const SPANS_KEPT: usize = 100;

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `agents audit verify LOG [--manifest FILE] [--json] [chain options]`.
pub(crate) fn verify(
    log_path: &Path,
    manifest: Option<&Path>,
    as_json: bool,
    mut chain: ChainArgs,
    out: &mut dyn Write,
) -> CmdResult {
    if let Some(p) = manifest {
        let m = load::manifest(p)?;
        if !m.is_canonical() {
            eprintln!(
                "note: `{}` is not in canonical form; checking records against its canonical sha256 {}",
                esc(&m.display_name()),
                m.manifest_sha256()
            );
        }
        chain.expected_manifest = Some(m.manifest_sha256());
    }
    let mut spans: Vec<ManifestSpan> = Vec::new();
    let mut more_spans = false;
    let mut bad_manifest: Option<ChainError> = None;
    let scan = source::scan(log_path, &chain, AfterBreak::Stop, |line, r| {
        if bad_manifest.is_none() && !is_sha256_hex(&r.manifest_sha256) {
            bad_manifest = Some(ChainError::ManifestMismatch {
                line,
                found: r.manifest_sha256.to_string(),
                expected: "a lowercase hex SHA-256".to_owned(),
            });
        }
        let full = spans.len() >= SPANS_KEPT;
        match spans.last_mut() {
            Some(s) if s.sha256 == r.manifest_sha256 => {
                s.last_line = line;
                s.records += 1;
            }
            _ if full => more_spans = true,
            _ => spans.push(ManifestSpan {
                sha256: r.manifest_sha256.to_string(),
                first_line: line,
                last_line: line,
                records: 1,
            }),
        }
    })?;
    // Every record must carry a manifest hash that is a SHA-256, even without `--manifest`.
    let result = match (scan.chain, bad_manifest) {
        (Err(e), Some(m)) if m.line() < e.line() => Err(m),
        (Ok(_), Some(m)) => Err(m),
        (result, _) => result,
    };
    let shown = crate::term::path(log_path);
    if as_json {
        print_json(out, &log_path.display().to_string(), &result, chain.expected_manifest.as_deref(), &spans);
    } else {
        print_text(out, &shown, &result, chain.expected_manifest.as_deref(), &spans, more_spans);
    }
    Ok(chain_code(&result))
}

fn print_json(
    out: &mut dyn Write,
    shown: &str,
    result: &Result<ChainSummary, ChainError>,
    expected: Option<&str>,
    spans: &[ManifestSpan],
) {
    let manifests: Vec<Value> = spans
        .iter()
        .map(
            |s| json!({"sha256": s.sha256, "first_line": s.first_line, "last_line": s.last_line, "records": s.records}),
        )
        .collect();
    let value = match result {
        Ok(summary) => json!({
            "ok": true,
            "log": shown,
            "records": summary.records,
            "last_hash": summary.last_hash,
            "guarantee": summary.guarantee(),
            "last_epoch": summary.last_epoch,
            "checkpoint": summary.checkpoints.map(|(n, seq)| json!({"number": n, "seq": seq})),
            "expected_manifest": expected,
            "manifests": manifests,
            "error": null,
        }),
        Err(e) => json!({
            "ok": false,
            "log": shown,
            "records_verified": e.line() - 1,
            "expected_manifest": expected,
            "manifests": manifests,
            "error": { "line": e.line(), "kind": e.kind(), "message": e.to_string() },
        }),
    };
    emit(out, format_args!("{}\n", term::json(&value)));
}

fn print_text(
    out: &mut dyn Write,
    shown: &str,
    result: &Result<ChainSummary, ChainError>,
    expected: Option<&str>,
    spans: &[ManifestSpan],
    more_spans: bool,
) {
    match result {
        Ok(summary) => {
            emit(out, format_args!("OK: `{shown}`: {} record(s), hash chain intact\n", summary.records));
            emit(out, format_args!("guarantee: {}\n", summary.guarantee()));
            emit(out, format_args!("last hash {}\n", esc(&summary.last_hash)));
            match expected {
                Some(h) => emit(out, format_args!("every record names manifest {}\n", esc(h))),
                None => {
                    for s in spans {
                        emit(
                            out,
                            format_args!(
                                "manifest {} on lines {}-{} ({} record(s))\n",
                                esc(&s.sha256),
                                s.first_line,
                                s.last_line,
                                s.records
                            ),
                        );
                    }
                    if more_spans {
                        emit(out, format_args!("(and more manifest changes after these)\n"));
                    }
                    if spans.len() > 1 {
                        emit(
                            out,
                            format_args!(
                                "note: the log spans {} manifests; pass --manifest FILE to require one\n",
                                spans.len()
                            ),
                        );
                    }
                }
            }
        }
        Err(e) => {
            let line = e.line();
            emit(out, format_args!("FAILED: `{shown}`: first bad line is {line}\n{}\n", esc(&e.to_string())));
            if let ChainError::TornTail { .. } = e {
                emit(
                    out,
                    format_args!(
                        "The last line is torn: a write was cut off (for example by a crash or a full disk). Lines 1-{} are intact; `agents audit recover` copies them to a new log.\n",
                        line - 1
                    ),
                );
            } else if line > 1 {
                emit(out, format_args!("Lines 1-{} verify; nothing from line {line} on can be trusted.\n", line - 1));
            } else {
                emit(out, format_args!("No line can be trusted.\n"));
            }
        }
    }
}
