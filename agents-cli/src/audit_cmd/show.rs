//! `agents audit show`: the records, filtered, as a table or JSON lines, written as they are
//! read.

use super::source::{self, AfterBreak};
use super::{ChainArgs, chain_code, emit, warn_about_scan};
use crate::error::{CliError, CmdResult};
use crate::table::{Table, clip};
use crate::term;
use agents_core::Tier;
use agents_core::audit::{AuditRecord, AuditStatus, RecordFilter, Selected};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Filters for `agents audit show`.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct ShowFilter {
    /// Only this run id.
    #[arg(long)]
    pub(crate) run: Option<String>,
    /// Only this session id.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// Only this user id.
    #[arg(long)]
    pub(crate) user: Option<String>,
    /// Only this tool.
    #[arg(long)]
    pub(crate) tool: Option<String>,
    /// Only this call id.
    #[arg(long)]
    pub(crate) call: Option<String>,
    /// Only these statuses (repeat or separate with commas), e.g. executed,denied.
    #[arg(long, value_delimiter = ',')]
    pub(crate) status: Vec<String>,
    /// Only these tiers (repeat or separate with commas): read, action, handoff.
    #[arg(long, value_delimiter = ',')]
    pub(crate) tier: Vec<String>,
    /// Only records at or after this RFC 3339 time.
    #[arg(long, value_name = "RFC3339")]
    pub(crate) since: Option<String>,
    /// Only records at or before this RFC 3339 time.
    #[arg(long, value_name = "RFC3339")]
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

/// The filters, parsed once, and how many records a time window could not read.
struct Selection {
    filter: RecordFilter,
    unparsable_ts: u64,
}

impl Selection {
    fn selects(&mut self, r: &AuditRecord) -> bool {
        match self.filter.select(r) {
            Selected::Yes => true,
            Selected::UnreadableTime => {
                self.unparsable_ts += 1;
                false
            }
            _ => false,
        }
    }
}

/// `agents audit show LOG [filters] [--json]`.
pub(crate) fn show(
    log_path: &Path,
    filter: &ShowFilter,
    as_json: bool,
    chain: &ChainArgs,
    out: &mut dyn Write,
) -> CmdResult {
    let mut selection = Selection {
        filter: RecordFilter {
            run: filter.run.clone(),
            session: filter.session.clone(),
            user: filter.user.clone(),
            tool: filter.tool.clone(),
            call: filter.call.clone(),
            statuses: parse_statuses(&filter.status)?,
            tiers: parse_tiers(&filter.tier)?,
            since: filter.since.as_deref().map(|s| parse_time(s, "--since")).transpose()?,
            until: filter.until.as_deref().map(|s| parse_time(s, "--until")).transpose()?,
        },
        unparsable_ts: 0,
    };
    let mut table = PagedTable::new(HEADER);
    let (mut selected, mut omitted) = (0u64, 0u64);
    let scan = source::scan(log_path, chain, AfterBreak::Continue, |_, r| {
        if !selection.selects(r) {
            return;
        }
        selected += 1;
        omitted += u64::from(r.values_omitted());
        if as_json {
            print_json_line(out, r);
        } else {
            table.row(row_cells(r), out);
        }
    })?;
    warn_about_scan(&scan);
    if selection.unparsable_ts > 0 {
        eprintln!(
            "warning: {} record(s) with a timestamp that is not RFC 3339 were left out by the time filter",
            selection.unparsable_ts
        );
    }
    if !as_json {
        table.flush(out);
        emit(out, format_args!("{selected} of {} record(s)\n", scan.records));
        if omitted > 0 {
            emit(out, format_args!("values omitted in {omitted} of them: {OMITTED_NOTE}\n"));
        }
    }
    Ok(chain_code(&scan.chain))
}

/// What the table says of a record whose arguments are names and keyed digests only.
const VALUES_OMITTED: &str = "(values omitted)";

/// The end of the footer's line when some records shown omit their values.
const OMITTED_NOTE: &str = "the log keeps each argument's name and a keyed digest of its value, not the value";

const HEADER: [&str; 10] = ["seq", "ts", "run", "user", "role", "tool", "tier", "status", "call", "detail"];

/// One record as JSON, exactly as written.
fn print_json_line(out: &mut dyn Write, r: &AuditRecord) {
    emit(out, format_args!("{}\n", term::json_line(&r.to_line())));
}

/// The table cells of one record.
fn row_cells(r: &AuditRecord) -> Vec<String> {
    let said = r.reason.as_deref().or(r.title.as_deref()).unwrap_or("");
    let said = if r.values_omitted() { format!("{VALUES_OMITTED} {said}") } else { said.to_owned() };
    let said = said.trim_end();
    // An imported tool's call leads with its server, the server's tool and the pin (and what
    // the server gave instead, when the call was refused for it): the reason may be clipped.
    let detail = match &r.import {
        Some(i) => {
            let short = |h: &str| h.chars().take(12).collect::<String>();
            let changed = i.listed_sha256.as_deref().map_or_else(String::new, |now| format!(" -> {}", short(now)));
            clip(&format!("[mcp {}:{} pin {}{changed}] {said}", i.server, i.tool, short(&i.sha256)), 100)
        }
        None => clip(said, 60),
    };
    vec![
        r.seq.to_string(),
        r.ts.clone(),
        r.run_id.to_string(),
        r.user_id.to_string(),
        r.role.to_string(),
        r.tool.as_deref().unwrap_or("-").to_owned(),
        r.tier.map_or_else(|| "-".into(), |t| t.to_string()),
        r.status.to_string(),
        r.call_id.as_deref().unwrap_or("-").to_owned(),
        detail,
    ]
}

/// A table printed in pages of [`PAGE`] rows, so memory stays bounded: the header once, each
/// page padded to the widest cells seen so far.
struct PagedTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    widths: Vec<usize>,
    header_printed: bool,
}

const PAGE: usize = 1000;

impl PagedTable {
    fn new(header: [&str; 10]) -> Self {
        let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
        let widths = header.iter().map(|h| h.chars().count()).collect();
        PagedTable { header, rows: Vec::new(), widths, header_printed: false }
    }

    fn row(&mut self, cells: Vec<String>, out: &mut dyn Write) {
        self.rows.push(cells);
        if self.rows.len() >= PAGE {
            self.flush(out);
        }
    }

    fn flush(&mut self, out: &mut dyn Write) {
        for r in &self.rows {
            for (w, c) in self.widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut t = Table::new(self.header.clone());
        t.set_min_widths(&self.widths);
        for r in self.rows.drain(..) {
            t.row(r);
        }
        let text = t.render();
        let text = if self.header_printed { text.splitn(3, '\n').nth(2).unwrap_or("") } else { text.as_str() };
        self.header_printed = true;
        emit(out, format_args!("{text}"));
    }
}
