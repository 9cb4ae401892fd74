//! `agents audit stats`: counts by tier and status, and the severe failures, from one pass
//! over the records.

use super::source::{self, AfterBreak};
use super::{ChainArgs, emit, warn_about_scan};
use crate::error::{CmdResult, EXIT_FINDING, EXIT_OK};
use crate::load;
use crate::table::Table;
use crate::term::{self, esc};
use agents_core::audit::AuditRecord;
use agents_core::audit::severe::{SevereFailure, SevereFinder};
use agents_core::manifest::Manifest;
use agents_core::{SharedStr, Tier};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

/// At most this many severe failures and tier mismatches are listed (all are counted).
const LISTED: usize = 1000;

/// The severe failures of a log ([`agents_core::audit::severe`]): all counted, the first
/// [`LISTED`] kept.
#[derive(Default)]
struct SevereList {
    finder: SevereFinder,
    found: Vec<SevereFailure>,
    count: u64,
}

impl SevereList {
    fn record(&mut self, line: usize, r: &AuditRecord, tier: Option<Tier>) {
        for s in self.finder.record_with_tier(line, r, tier) {
            self.count += 1;
            if self.found.len() < LISTED {
                self.found.push(s);
            }
        }
    }
}

/// `agents audit stats LOG [--manifest FILE] [--json]`: exit 1 when the chain is broken or
/// there are severe failures.
pub(crate) fn stats(
    log_path: &Path,
    manifest: Option<&Path>,
    as_json: bool,
    chain: &ChainArgs,
    out: &mut dyn Write,
) -> CmdResult {
    let manifest: Option<Manifest> = manifest.map(load::manifest).transpose()?.map(|m| m.manifest);
    // The tier of a record: the stricter of what the record says and what the manifest
    // declares for the tool, so a record that understates its tier cannot hide a failure.
    let declared = |r: &AuditRecord| -> Option<Tier> { manifest.as_ref()?.tool(r.tool.as_deref()?).map(|t| t.tier) };
    let rank = |t: Tier| match t {
        Tier::Read => 0,
        Tier::Action => 1,
        Tier::Handoff => 2,
        // A tier this command does not know counts as the strictest.
        _ => 3,
    };
    let effective = |r: &AuditRecord| -> Option<Tier> {
        match (r.tier, declared(r)) {
            (Some(a), Some(b)) => Some(if rank(a) >= rank(b) { a } else { b }),
            (a, b) => a.or(b),
        }
    };
    let mut totals = Totals::default();
    let mut severe = SevereList::default();
    let scan = source::scan(log_path, chain, AfterBreak::Continue, |line, r| {
        if let (Some(rt), Some(mt)) = (r.tier, declared(r))
            && rt != mt
        {
            totals.mismatch_count += 1;
            if totals.mismatches.len() < LISTED {
                totals.mismatches.push((line, r.tool.as_deref().unwrap_or_default().to_owned(), rt, mt));
            }
        }
        let tier = effective(r);
        let tier_name = tier.map_or("none", Tier::as_str);
        *totals.counts.entry(tier_name.to_owned()).or_default().entry(r.status.to_string()).or_default() += 1;
        totals.records += 1;
        totals.runs.insert(r.run_id.clone());
        totals.users.insert(r.user_id.clone());
        totals.manifests.insert(r.manifest_sha256.clone());
        severe.record(line, r, tier);
    })?;
    warn_about_scan(&scan);
    if as_json {
        print_json(out, &totals, &scan.chain, &severe);
    } else {
        print_text(out, &totals, &scan.chain, &severe);
    }
    Ok(if scan.chain.is_ok() && severe.count == 0 { EXIT_OK } else { EXIT_FINDING })
}

/// What `stats` counts.
#[derive(Default)]
struct Totals {
    records: u64,
    counts: BTreeMap<String, BTreeMap<String, usize>>,
    runs: BTreeSet<SharedStr>,
    users: BTreeSet<SharedStr>,
    manifests: BTreeSet<SharedStr>,
    mismatches: Vec<(usize, String, Tier, Tier)>,
    mismatch_count: u64,
}

type Chain = Result<agents_core::audit::ChainSummary, agents_core::audit::ChainError>;

fn print_json(out: &mut dyn Write, t: &Totals, chain: &Chain, severe: &SevereList) {
    let severe_json: Vec<Value> = severe
        .found
        .iter()
        .map(|s| {
            json!({
                "kind": s.kind.as_str(),
                "line": s.position,
                "seq": s.seq,
                "run_id": s.run_id,
                "call_id": s.call_id,
                "tool": s.tool,
                "user_id": s.user_id,
                "detail": s.detail,
            })
        })
        .collect();
    let value = json!({
        "records": t.records,
        "runs": t.runs.len(),
        "users": t.users.len(),
        "manifests": t.manifests,
        "chain": match chain {
            Ok(summary) => json!({"ok": true, "guarantee": summary.guarantee()}),
            Err(e) => json!({"ok": false, "line": e.line(), "kind": e.kind(), "message": e.to_string()}),
        },
        "by_tier_status": t.counts,
        "tier_mismatches": t.mismatches.iter().map(|(line, tool, rec, man)| json!({"line": line, "tool": tool, "record": rec, "manifest": man})).collect::<Vec<_>>(),
        "severe_failures": severe_json,
        "severe_failure_count": severe.count,
    });
    emit(out, format_args!("{}\n", term::json(&value)));
}

fn print_text(out: &mut dyn Write, t: &Totals, chain: &Chain, severe: &SevereList) {
    emit(
        out,
        format_args!(
            "records: {}   runs: {}   users: {}   manifests: {}\n",
            t.records,
            t.runs.len(),
            t.users.len(),
            t.manifests.len()
        ),
    );
    match chain {
        Ok(summary) => emit(out, format_args!("hash chain: intact ({})\n", summary.guarantee())),
        Err(e) => emit(
            out,
            format_args!(
                "hash chain: BROKEN ({}); the figures below are computed from the records as they are\n",
                esc(&e.to_string())
            ),
        ),
    }
    emit(out, format_args!("\n"));

    let statuses: BTreeSet<&String> = t.counts.values().flat_map(|m| m.keys()).collect();
    let order = ["read", "action", "handoff", "none"];
    let mut header = vec!["tier".to_owned()];
    header.extend(statuses.iter().map(|s| (*s).clone()));
    header.push("total".to_owned());
    let mut table = Table::new(header);
    let mut col_totals = vec![0usize; statuses.len()];
    for tier in order {
        let Some(m) = t.counts.get(tier) else { continue };
        let mut row = vec![tier.to_owned()];
        let mut total = 0;
        for (i, s) in statuses.iter().enumerate() {
            let n = m.get(*s).copied().unwrap_or(0);
            col_totals[i] += n;
            total += n;
            row.push(n.to_string());
        }
        row.push(total.to_string());
        table.row(row);
    }
    let mut total_row = vec!["total".to_owned()];
    total_row.extend(col_totals.iter().map(ToString::to_string));
    total_row.push(col_totals.iter().sum::<usize>().to_string());
    table.row(total_row);
    emit(out, format_args!("{}", table.render()));
    emit(out, format_args!("(tier `none`: records that are not about a tool call, such as run_started)\n"));

    if !t.mismatches.is_empty() {
        emit(out, format_args!("\ntier mismatches (record vs manifest; the stricter tier is used):\n"));
        for (line, tool, rec, man) in &t.mismatches {
            emit(out, format_args!("  line {line}: tool `{}` recorded as {rec}, declared {man}\n", esc(tool)));
        }
        if t.mismatch_count > t.mismatches.len() as u64 {
            emit(out, format_args!("  ... and {} more\n", t.mismatch_count - t.mismatches.len() as u64));
        }
    }

    emit(out, format_args!("\nsevere failures: {}\n", severe.count));
    for s in &severe.found {
        emit(
            out,
            format_args!(
                "  line {} (seq {}) run {} call {} tool {}: {}: {}\n",
                s.position,
                s.seq,
                esc(&s.run_id),
                esc(s.call_id.as_deref().unwrap_or("-")),
                esc(s.tool.as_deref().unwrap_or("-")),
                s.kind,
                esc(&s.detail)
            ),
        );
    }
    if severe.count > severe.found.len() as u64 {
        emit(out, format_args!("  ... and {} more\n", severe.count - severe.found.len() as u64));
    }
}
