//! `agents audit ...`: verify, show, stats.

use crate::error::{CliError, CmdResult, EXIT_FINDING, EXIT_OK};
use crate::load::{self, LoadedLog};
use crate::table::{Table, clip};
use crate::term::{self, esc};
use agents_core::audit::{AuditRecord, AuditStatus, ChainError, verify_jsonl};
use agents_core::manifest::Manifest;
use agents_core::{SharedStr, Tier};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

fn chain_error_kind(e: &ChainError) -> &'static str {
    match e {
        ChainError::Malformed { .. } => "malformed",
        ChainError::HashMismatch { .. } => "hash_mismatch",
        ChainError::BrokenLink { .. } => "broken_link",
        ChainError::Sequence { .. } => "sequence",
        ChainError::TornTail { .. } => "torn_tail",
        ChainError::ManifestMismatch { .. } => "manifest_mismatch",
    }
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A run of consecutive records naming one manifest.
struct ManifestSpan {
    sha256: String,
    first_line: usize,
    last_line: usize,
    records: usize,
}

fn manifest_spans(log: &LoadedLog) -> Vec<ManifestSpan> {
    let mut spans: Vec<ManifestSpan> = Vec::new();
    for (line, r) in &log.records {
        match spans.last_mut() {
            Some(s) if s.sha256 == r.manifest_sha256 => {
                s.last_line = *line;
                s.records += 1;
            }
            _ => spans.push(ManifestSpan {
                sha256: r.manifest_sha256.to_string(),
                first_line: *line,
                last_line: *line,
                records: 1,
            }),
        }
    }
    spans
}

/// `agents audit verify LOG [--manifest FILE] [--json]`.
pub(crate) fn verify(
    log_path: &Path,
    manifest: Option<&Path>,
    as_json: bool,
    out: &mut String,
    err: &mut String,
) -> CmdResult {
    let log = load::audit_log(log_path)?;
    let expected = match manifest {
        Some(p) => {
            let m = load::manifest(p)?;
            if !m.is_canonical() {
                let _ = writeln!(
                    err,
                    "note: `{}` is not in canonical form; checking records against its canonical sha256 {}",
                    m.display_name(),
                    m.manifest_sha256()
                );
            }
            Some(m.manifest_sha256())
        }
        None => None,
    };
    let mut result = verify_jsonl(&log.text, expected.as_deref());
    // Every record must carry a manifest hash that is a SHA-256, even without `--manifest`.
    if let Some((line, r)) = log.records.iter().find(|(_, r)| !is_sha256_hex(&r.manifest_sha256))
        && result.as_ref().err().is_none_or(|e| e.line() > *line)
    {
        result = Err(ChainError::ManifestMismatch {
            line: *line,
            found: r.manifest_sha256.to_string(),
            expected: "a lowercase hex SHA-256".to_owned(),
        });
    }
    let spans = manifest_spans(&log);
    let shown = term::path(log_path);

    if as_json {
        let manifests: Vec<Value> = spans
            .iter()
            .map(|s| json!({"sha256": s.sha256, "first_line": s.first_line, "last_line": s.last_line, "records": s.records}))
            .collect();
        let value = match &result {
            Ok(summary) => json!({
                "ok": true,
                "log": log_path.display().to_string(),
                "records": summary.records,
                "last_hash": summary.last_hash,
                "expected_manifest": expected,
                "manifests": manifests,
                "error": null,
            }),
            Err(e) => json!({
                "ok": false,
                "log": log_path.display().to_string(),
                "records_verified": e.line() - 1,
                "expected_manifest": expected,
                "manifests": manifests,
                "error": { "line": e.line(), "kind": chain_error_kind(e), "message": e.to_string() },
            }),
        };
        out.push_str(&term::json(&value));
        out.push('\n');
        return Ok(if result.is_ok() { EXIT_OK } else { EXIT_FINDING });
    }

    match &result {
        Ok(summary) => {
            let _ = writeln!(out, "OK: `{shown}`: {} record(s), hash chain intact", summary.records);
            let _ = writeln!(out, "last hash {}", esc(&summary.last_hash));
            match &expected {
                Some(h) => {
                    let _ = writeln!(out, "every record names manifest {}", esc(h));
                }
                None => {
                    for s in &spans {
                        let _ = writeln!(
                            out,
                            "manifest {} on lines {}-{} ({} record(s))",
                            esc(&s.sha256),
                            s.first_line,
                            s.last_line,
                            s.records
                        );
                    }
                    if spans.len() > 1 {
                        let _ = writeln!(
                            out,
                            "note: the log spans {} manifests; pass --manifest FILE to require one",
                            spans.len()
                        );
                    }
                }
            }
            Ok(EXIT_OK)
        }
        Err(e) => {
            let line = e.line();
            let _ = writeln!(out, "FAILED: `{shown}`: first bad line is {line}");
            let _ = writeln!(out, "{}", esc(&e.to_string()));
            if let ChainError::TornTail { .. } = e {
                let _ = writeln!(
                    out,
                    "The last line is torn: a write was cut off (for example by a crash or a full disk). Lines 1-{} are intact.",
                    line - 1
                );
            } else if line > 1 {
                let _ = writeln!(out, "Lines 1-{} verify; nothing from line {line} on can be trusted.", line - 1);
            } else {
                let _ = writeln!(out, "No line can be trusted.");
            }
            Ok(EXIT_FINDING)
        }
    }
}

/// Filters for `agents audit show`.
pub(crate) struct ShowFilter {
    pub(crate) run: Option<String>,
    pub(crate) session: Option<String>,
    pub(crate) user: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) call: Option<String>,
    pub(crate) status: Vec<String>,
    pub(crate) tier: Vec<String>,
    pub(crate) since: Option<String>,
    pub(crate) until: Option<String>,
}

fn parse_time(s: &str, flag: &str) -> Result<OffsetDateTime, CliError> {
    OffsetDateTime::parse(s, &Rfc3339).map_err(|e| {
        CliError::new(format!("{flag} `{s}` is not an RFC 3339 timestamp: {e}"))
            .hint("write it like 2026-05-27T14:00:00Z or 2026-05-27T16:00:00+02:00")
    })
}

fn parse_statuses(names: &[String]) -> Result<BTreeSet<AuditStatus>, CliError> {
    names
        .iter()
        .map(|n| {
            serde_json::from_value::<AuditStatus>(Value::String(n.trim().to_owned())).map_err(|_| {
                CliError::new(format!("unknown status `{n}`")).hint(
                    "use one of: run_started, run_finished, proposed, confirmed, executed, failed, rejected, skipped, denied, handed_off, modified, substituted, notice",
                )
            })
        })
        .collect()
}

fn parse_tiers(names: &[String]) -> Result<BTreeSet<Tier>, CliError> {
    names
        .iter()
        .map(|n| {
            serde_json::from_value::<Tier>(Value::String(n.trim().to_owned()))
                .map_err(|_| CliError::new(format!("unknown tier `{n}`")).hint("use one of: read, action, handoff"))
        })
        .collect()
}

fn warn_about_log(log: &LoadedLog, err: &mut String) {
    for (line, msg) in &log.bad_lines {
        let _ = writeln!(err, "warning: line {line} is not an audit record and is skipped: {}", esc(msg));
    }
    if let Some(line) = log.torn_line {
        let _ = writeln!(err, "warning: line {line} is torn (a write was cut off) and is skipped");
    }
    if let Err(e) = verify_jsonl(&log.text, None)
        && (log.torn_line.is_none() || !matches!(e, ChainError::TornTail { .. }))
    {
        let _ = writeln!(
            err,
            "warning: the hash chain does not verify ({}); records are shown as they are. Run `agents audit verify` for details.",
            esc(&e.to_string())
        );
    }
}

/// `agents audit show LOG [filters] [--json]`.
pub(crate) fn show(
    log_path: &Path,
    filter: &ShowFilter,
    as_json: bool,
    out: &mut String,
    err: &mut String,
) -> CmdResult {
    let statuses = parse_statuses(&filter.status)?;
    let tiers = parse_tiers(&filter.tier)?;
    let since = filter.since.as_deref().map(|s| parse_time(s, "--since")).transpose()?;
    let until = filter.until.as_deref().map(|s| parse_time(s, "--until")).transpose()?;
    let log = load::audit_log(log_path)?;
    warn_about_log(&log, err);

    let eq = |want: &Option<String>, have: Option<&str>| want.as_deref().is_none_or(|w| have == Some(w));
    let mut unparsable_ts = 0usize;
    let selected: Vec<&(usize, AuditRecord)> = log
        .records
        .iter()
        .filter(|(_, r)| {
            eq(&filter.run, Some(&r.run_id))
                && eq(&filter.session, Some(&r.session_id))
                && eq(&filter.user, Some(&r.user_id))
                && eq(&filter.tool, r.tool.as_deref())
                && eq(&filter.call, r.call_id.as_deref())
                && (statuses.is_empty() || statuses.contains(&r.status))
                && (tiers.is_empty() || r.tier.is_some_and(|t| tiers.contains(&t)))
        })
        .filter(|(_, r)| {
            if since.is_none() && until.is_none() {
                return true;
            }
            match OffsetDateTime::parse(&r.ts, &Rfc3339) {
                Ok(ts) => since.is_none_or(|s| ts >= s) && until.is_none_or(|u| ts <= u),
                Err(_) => {
                    unparsable_ts += 1;
                    false
                }
            }
        })
        .collect();
    if unparsable_ts > 0 {
        let _ = writeln!(
            err,
            "warning: {unparsable_ts} record(s) with a timestamp that is not RFC 3339 were left out by the time filter"
        );
    }

    if as_json {
        for (_, r) in &selected {
            out.push_str(&term::json_line(&r.to_line()));
            out.push('\n');
        }
    } else {
        let mut t = Table::new(["seq", "ts", "run", "user", "role", "tool", "tier", "status", "call", "detail"]);
        for (_, r) in &selected {
            let detail = r.reason.as_deref().or(r.title.as_deref()).unwrap_or("");
            t.row([
                r.seq.to_string(),
                r.ts.clone(),
                r.run_id.to_string(),
                r.user_id.to_string(),
                r.role.to_string(),
                r.tool.as_deref().unwrap_or("-").to_owned(),
                r.tier.map_or_else(|| "-".into(), |t| t.to_string()),
                r.status.to_string(),
                r.call_id.as_deref().unwrap_or("-").to_owned(),
                clip(detail, 60),
            ]);
        }
        out.push_str(&t.render());
        let _ = writeln!(out, "{} of {} record(s)", selected.len(), log.records.len());
    }
    Ok(EXIT_OK)
}

/// A severe failure found in the records.
struct Severe {
    kind: &'static str,
    line: usize,
    record: AuditRecord,
    detail: String,
}

/// Finds the severe failures: an action executed without a matching approval (same run,
/// call and argument hash; one approval per execution), any handoff executed, and a denied
/// call later executed (same run and call id, or same run, tool and argument hash).
fn severe_failures(records: &[(usize, AuditRecord)], tiers: &dyn Fn(&AuditRecord) -> Option<Tier>) -> Vec<Severe> {
    type CallKey = (SharedStr, SharedStr);
    let mut approvals: HashMap<CallKey, Vec<(Option<String>, usize)>> = HashMap::new();
    let mut denied_calls: HashMap<CallKey, usize> = HashMap::new();
    let mut denied_args: HashMap<(SharedStr, SharedStr, String), usize> = HashMap::new();
    let mut found = Vec::new();

    for (line, r) in records {
        let key = r.call_id.as_ref().map(|c| (r.run_id.clone(), c.clone()));
        match r.status {
            AuditStatus::Confirmed => {
                if let Some(k) = key {
                    approvals.entry(k).or_default().push((r.args_hash.clone(), *line));
                }
            }
            AuditStatus::Denied => {
                if let Some(k) = key {
                    denied_calls.entry(k).or_insert(*line);
                }
                if let (Some(tool), Some(h)) = (&r.tool, &r.args_hash) {
                    denied_args.entry((r.run_id.clone(), tool.clone(), h.clone())).or_insert(*line);
                }
            }
            AuditStatus::Executed => {
                let tier = tiers(r);
                let severe = |kind, detail: String| Severe { kind, line: *line, record: r.clone(), detail };
                if tier == Some(Tier::Action) {
                    match &key {
                        None => found.push(severe(
                            "action_without_approval",
                            "action executed without a call id, so no approval can match it".into(),
                        )),
                        Some(k) => {
                            let pending = approvals.entry(k.clone()).or_default();
                            let matching =
                                pending.iter().position(|(h, _)| h.is_some() && h.as_deref() == r.args_hash.as_deref());
                            match matching {
                                Some(i) => {
                                    pending.remove(i);
                                }
                                None if pending.is_empty() => found.push(severe(
                                    "action_without_approval",
                                    "action executed with no earlier unused `confirmed` record for this run and call"
                                        .into(),
                                )),
                                None => found.push(severe(
                                    "action_without_approval",
                                    format!(
                                        "action executed with argument hash {} but the approval on line {} was for {}",
                                        r.args_hash.as_deref().unwrap_or("(none)"),
                                        pending[0].1,
                                        pending[0].0.as_deref().unwrap_or("(none)")
                                    ),
                                )),
                            }
                        }
                    }
                }
                if tier == Some(Tier::Handoff) {
                    found.push(severe(
                        "handoff_executed",
                        "a handoff tool has no execution path, yet a record says it executed".into(),
                    ));
                }
                let by_call = key.as_ref().and_then(|k| denied_calls.get(k));
                let by_args = match (&r.tool, &r.args_hash) {
                    (Some(t), Some(h)) => denied_args.get(&(r.run_id.clone(), t.clone(), h.clone())),
                    _ => None,
                };
                if let Some(d) = by_call {
                    found.push(severe(
                        "denied_then_executed",
                        format!("this call was denied on line {d}, then executed"),
                    ));
                } else if let Some(d) = by_args {
                    found.push(severe(
                        "denied_then_executed",
                        format!("the same tool and arguments were denied on line {d} in this run, then executed"),
                    ));
                }
            }
            _ => {}
        }
    }
    found
}

/// `agents audit stats LOG [--manifest FILE] [--json]`: exit 1 when there are severe failures.
pub(crate) fn stats(
    log_path: &Path,
    manifest: Option<&Path>,
    as_json: bool,
    out: &mut String,
    err: &mut String,
) -> CmdResult {
    let log = load::audit_log(log_path)?;
    let manifest: Option<Manifest> = manifest.map(load::manifest).transpose()?.map(|m| m.manifest);
    warn_about_log(&log, err);
    let chain = verify_jsonl(&log.text, None);

    // The tier of a record: the stricter of what the record says and what the manifest
    // declares for the tool, so a record that understates its tier cannot hide a failure.
    let mut mismatches: Vec<(usize, String, Tier, Tier)> = Vec::new();
    let declared = |r: &AuditRecord| -> Option<Tier> { manifest.as_ref()?.tool(r.tool.as_deref()?).map(|t| t.tier) };
    for (line, r) in &log.records {
        if let (Some(rt), Some(mt)) = (r.tier, declared(r))
            && rt != mt
        {
            mismatches.push((*line, r.tool.as_deref().unwrap_or_default().to_owned(), rt, mt));
        }
    }
    let rank = |t: Tier| match t {
        Tier::Read => 0,
        Tier::Action => 1,
        Tier::Handoff => 2,
    };
    let effective = |r: &AuditRecord| -> Option<Tier> {
        match (r.tier, declared(r)) {
            (Some(a), Some(b)) => Some(if rank(a) >= rank(b) { a } else { b }),
            (a, b) => a.or(b),
        }
    };

    let mut counts: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (_, r) in &log.records {
        let tier = effective(r).map_or_else(|| "none".to_owned(), |t| t.to_string());
        *counts.entry(tier).or_default().entry(r.status.to_string()).or_default() += 1;
    }
    let severe = severe_failures(&log.records, &effective);
    let runs: BTreeSet<&str> = log.records.iter().map(|(_, r)| r.run_id.as_str()).collect();
    let users: BTreeSet<&str> = log.records.iter().map(|(_, r)| r.user_id.as_str()).collect();
    let manifests: BTreeSet<&str> = log.records.iter().map(|(_, r)| r.manifest_sha256.as_str()).collect();

    if as_json {
        let severe_json: Vec<Value> = severe
            .iter()
            .map(|s| {
                json!({
                    "kind": s.kind,
                    "line": s.line,
                    "seq": s.record.seq,
                    "run_id": s.record.run_id,
                    "call_id": s.record.call_id,
                    "tool": s.record.tool,
                    "user_id": s.record.user_id,
                    "detail": s.detail,
                })
            })
            .collect();
        let value = json!({
            "records": log.records.len(),
            "runs": runs.len(),
            "users": users.len(),
            "manifests": manifests,
            "chain": match &chain {
                Ok(_) => json!({"ok": true}),
                Err(e) => json!({"ok": false, "line": e.line(), "kind": chain_error_kind(e), "message": e.to_string()}),
            },
            "by_tier_status": counts,
            "tier_mismatches": mismatches.iter().map(|(line, tool, rec, man)| json!({"line": line, "tool": tool, "record": rec, "manifest": man})).collect::<Vec<_>>(),
            "severe_failures": severe_json,
        });
        out.push_str(&term::json(&value));
        out.push('\n');
        return Ok(if severe.is_empty() { EXIT_OK } else { EXIT_FINDING });
    }

    let _ = writeln!(
        out,
        "records: {}   runs: {}   users: {}   manifests: {}",
        log.records.len(),
        runs.len(),
        users.len(),
        manifests.len()
    );
    match &chain {
        Ok(_) => {
            let _ = writeln!(out, "hash chain: intact");
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "hash chain: BROKEN ({}); the figures below are computed from the records as they are",
                esc(&e.to_string())
            );
        }
    }
    out.push('\n');

    let statuses: BTreeSet<&String> = counts.values().flat_map(|m| m.keys()).collect();
    let order = ["read", "action", "handoff", "none"];
    let mut header = vec!["tier".to_owned()];
    header.extend(statuses.iter().map(|s| (*s).clone()));
    header.push("total".to_owned());
    let mut t = Table::new(header);
    let mut col_totals = vec![0usize; statuses.len()];
    for tier in order {
        let Some(m) = counts.get(tier) else { continue };
        let mut row = vec![tier.to_owned()];
        let mut total = 0;
        for (i, s) in statuses.iter().enumerate() {
            let n = m.get(*s).copied().unwrap_or(0);
            col_totals[i] += n;
            total += n;
            row.push(n.to_string());
        }
        row.push(total.to_string());
        t.row(row);
    }
    let mut total_row = vec!["total".to_owned()];
    total_row.extend(col_totals.iter().map(ToString::to_string));
    total_row.push(col_totals.iter().sum::<usize>().to_string());
    t.row(total_row);
    out.push_str(&t.render());
    let _ = writeln!(out, "(tier `none`: records that are not about a tool call, such as run_started)");

    if !mismatches.is_empty() {
        let _ = writeln!(out, "\ntier mismatches (record vs manifest; the stricter tier is used):");
        for (line, tool, rec, man) in &mismatches {
            let _ = writeln!(out, "  line {line}: tool `{}` recorded as {rec}, declared {man}", esc(tool));
        }
    }

    let _ = writeln!(out, "\nsevere failures: {}", severe.len());
    for s in &severe {
        let _ = writeln!(
            out,
            "  line {} (seq {}) run {} call {} tool {}: {}: {}",
            s.line,
            s.record.seq,
            esc(&s.record.run_id),
            esc(s.record.call_id.as_deref().unwrap_or("-")),
            esc(s.record.tool.as_deref().unwrap_or("-")),
            s.kind,
            esc(&s.detail)
        );
    }
    Ok(if severe.is_empty() { EXIT_OK } else { EXIT_FINDING })
}
