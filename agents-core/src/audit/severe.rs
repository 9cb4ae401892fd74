//! Severe failures: what an audit log must never show, computed from the records alone.
//!
//! This is the one definition the `agents audit stats` command and the examples' demos use. A
//! severe failure is a record that says the gate was bypassed:
//!
//! - [`SevereKind::ActionWithoutApproval`]: an `executed` record of an action tool with no
//!   earlier, unused `confirmed` record of the same run, call id and argument hash (one approval
//!   allows one execution; an action executed without a call id can match no approval);
//! - [`SevereKind::HandoffExecuted`]: an `executed` or `failed` record of a handoff tool, which
//!   has no execution path at all;
//! - [`SevereKind::DeniedThenExecuted`]: an `executed` record after a `denied` or `rejected`
//!   record of the same run and call id, or after a `denied` record of the same run, tool and
//!   argument hash (a person may decline a proposal and approve the same arguments when they are
//!   proposed again, so a rejection covers its own call only).
//!
//! The rules hold against a writer that records what happened: they find a runtime (or a
//! person editing the log) that let a call through the gate without the records the gate
//! writes. A writer that forges the approving records as well is the chain's business
//! ([`ChainVerifier`](super::ChainVerifier) with a keyed chain), not this module's.
//!
//! Records are scoped by run: a run's state is dropped at its `run_finished` record, so a
//! [`SevereFinder`] holds memory for the runs in flight, not for the whole log.

use super::record::{AuditRecord, AuditStatus};
use crate::SharedStr;
use crate::tool::Tier;
use std::collections::HashMap;
use std::fmt;

/// Which rule a severe failure breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum SevereKind {
    /// An action ran without a matching, unused approval.
    ActionWithoutApproval,
    /// A handoff tool, which has no execution path, has a record saying it ran.
    HandoffExecuted,
    /// A call that was denied or declined ran anyway.
    DeniedThenExecuted,
}

impl SevereKind {
    /// The snake_case name (`action_without_approval`, `handoff_executed`,
    /// `denied_then_executed`), as the CLI's JSON output carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            SevereKind::ActionWithoutApproval => "action_without_approval",
            SevereKind::HandoffExecuted => "handoff_executed",
            SevereKind::DeniedThenExecuted => "denied_then_executed",
        }
    }
}

impl fmt::Display for SevereKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One severe failure: the record that shows it and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SevereFailure {
    /// The rule it breaks.
    pub kind: SevereKind,
    /// The 1-based position of the record in the log (its line in a JSONL file, its row in an
    /// SQLite table), as the caller numbered it.
    pub position: usize,
    /// The record's `seq`.
    pub seq: u64,
    /// The record's run.
    pub run_id: SharedStr,
    /// The record's call, when it has one.
    pub call_id: Option<SharedStr>,
    /// The record's tool.
    pub tool: Option<SharedStr>,
    /// The user the run acted for.
    pub user_id: SharedStr,
    /// What was found, for a person (names the position of the related record, if any).
    pub detail: String,
}

impl fmt::Display for SevereFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} (seq {}) run {} call {} tool {}: {}: {}",
            self.position,
            self.seq,
            self.run_id,
            self.call_id.as_deref().unwrap_or("-"),
            self.tool.as_deref().unwrap_or("-"),
            self.kind,
            self.detail
        )
    }
}

/// What one run has shown so far.
#[derive(Debug, Default)]
struct RunState {
    /// Unused approvals by call id: (argument hash, position).
    approvals: HashMap<SharedStr, Vec<(Option<String>, usize)>>,
    /// Denied or rejected calls by call id: position of the first refusal.
    refused_calls: HashMap<SharedStr, usize>,
    /// Denied (tool, argument hash): position of the first denial.
    denied_args: HashMap<(SharedStr, String), usize>,
}

/// Finds severe failures record by record, in log order.
///
/// ```
/// use agents_core::audit::severe::{SevereFinder, SevereKind};
/// # use agents_core::audit::AuditRecord;
/// # fn records() -> Vec<AuditRecord> { Vec::new() }
/// let mut finder = SevereFinder::new();
/// for (i, record) in records().iter().enumerate() {
///     for failure in finder.record(i + 1, record) {
///         eprintln!("SEVERE: {failure}");
///     }
/// }
/// ```
#[derive(Debug, Default)]
pub struct SevereFinder {
    runs: HashMap<SharedStr, RunState>,
}

impl SevereFinder {
    /// A finder that has seen no record.
    pub fn new() -> Self {
        Self::default()
    }

    /// The severe failures `record`, at 1-based `position`, shows, judged by the tier the
    /// record carries.
    pub fn record(&mut self, position: usize, record: &AuditRecord) -> Vec<SevereFailure> {
        self.record_with_tier(position, record, record.tier)
    }

    /// As [`record`](Self::record), judged by `tier` instead of the record's own (the CLI passes
    /// the stricter of the record's tier and the manifest's, so a record that understates its
    /// tier cannot hide a failure).
    pub fn record_with_tier(&mut self, position: usize, r: &AuditRecord, tier: Option<Tier>) -> Vec<SevereFailure> {
        if r.status == AuditStatus::RunFinished {
            self.runs.remove(&r.run_id);
            return Vec::new();
        }
        let run = self.runs.entry(r.run_id.clone()).or_default();
        let failure = |kind, detail: String| SevereFailure {
            kind,
            position,
            seq: r.seq,
            run_id: r.run_id.clone(),
            call_id: r.call_id.clone(),
            tool: r.tool.clone(),
            user_id: r.user_id.clone(),
            detail,
        };
        let mut found = Vec::new();
        match r.status {
            AuditStatus::Confirmed => {
                if let Some(call) = &r.call_id {
                    run.approvals.entry(call.clone()).or_default().push((r.args_hash.clone(), position));
                }
            }
            AuditStatus::Denied | AuditStatus::Rejected => {
                if let Some(call) = &r.call_id {
                    run.refused_calls.entry(call.clone()).or_insert(position);
                }
                if r.status == AuditStatus::Denied
                    && let (Some(tool), Some(hash)) = (&r.tool, &r.args_hash)
                {
                    run.denied_args.entry((tool.clone(), hash.clone())).or_insert(position);
                }
            }
            AuditStatus::Failed if tier == Some(Tier::Handoff) => {
                found.push(failure(SevereKind::HandoffExecuted, HANDOFF_RAN.into()));
            }
            AuditStatus::Executed => {
                if tier == Some(Tier::Action)
                    && let Some(detail) = run.take_approval(r)
                {
                    found.push(failure(SevereKind::ActionWithoutApproval, detail));
                }
                if tier == Some(Tier::Handoff) {
                    found.push(failure(SevereKind::HandoffExecuted, HANDOFF_RAN.into()));
                }
                if let Some(detail) = run.refusal_of(r) {
                    found.push(failure(SevereKind::DeniedThenExecuted, detail));
                }
            }
            _ => {}
        }
        found
    }
}

const HANDOFF_RAN: &str = "a handoff tool has no execution path, yet a record says it executed";

impl RunState {
    /// Uses up the approval an executed action needs; `Some(why)` when there is none.
    fn take_approval(&mut self, r: &AuditRecord) -> Option<String> {
        let Some(call) = &r.call_id else {
            return Some("action executed without a call id, so no approval can match it".into());
        };
        let pending = self.approvals.entry(call.clone()).or_default();
        let matching = pending.iter().position(|(h, _)| h.is_some() && h.as_deref() == r.args_hash.as_deref());
        match matching {
            Some(i) => {
                pending.remove(i);
                None
            }
            None if pending.is_empty() => {
                Some("action executed with no earlier unused `confirmed` record for this run and call".into())
            }
            None => Some(format!(
                "action executed with argument hash {} but the approval on line {} was for {}",
                r.args_hash.as_deref().unwrap_or("(none)"),
                pending[0].1,
                pending[0].0.as_deref().unwrap_or("(none)")
            )),
        }
    }

    /// The earlier refusal an executed call breaks, if any.
    fn refusal_of(&self, r: &AuditRecord) -> Option<String> {
        if let Some(line) = r.call_id.as_ref().and_then(|c| self.refused_calls.get(c)) {
            return Some(format!("this call was denied or declined on line {line}, then executed"));
        }
        let (tool, hash) = (r.tool.as_ref()?, r.args_hash.as_ref()?);
        let line = self.denied_args.get(&(tool.clone(), hash.clone()))?;
        Some(format!("the same tool and arguments were denied on line {line} in this run, then executed"))
    }
}

/// Every severe failure in `records`, in log order; positions count from 1.
pub fn severe_failures(records: &[AuditRecord]) -> Vec<SevereFailure> {
    let mut finder = SevereFinder::new();
    records.iter().enumerate().flat_map(|(i, r)| finder.record(i + 1, r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(run: &str, call: Option<&str>, tool: &str, tier: &str, status: &str, hash: Option<&str>) -> AuditRecord {
        serde_json::from_value(json!({
            "seq": 0, "ts": "2026-03-16T09:00:00Z", "run_id": run, "session_id": "s", "request_id": "q",
            "call_id": call, "user_id": "u", "org_id": "o", "role": "employee", "agent": "deskloop",
            "tool": tool, "tier": tier, "status": status, "reason": null, "title": null, "args": null,
            "args_hash": hash, "result": null, "manifest_sha256": "00", "prev_hash": "", "hash": ""
        }))
        .unwrap()
    }

    fn call(call: &str, tool: &str, tier: &str, status: &str, hash: &str) -> AuditRecord {
        rec("r", Some(call), tool, tier, status, Some(hash))
    }

    fn kinds(records: &[AuditRecord]) -> Vec<(SevereKind, usize)> {
        severe_failures(records).into_iter().map(|f| (f.kind, f.position)).collect()
    }

    use SevereKind::*;

    #[test]
    fn a_confirmed_action_and_a_handoff_record_are_not_severe() {
        let ok = [
            call("c1", "open_ticket", "action", "proposed", "h1"),
            call("c1", "open_ticket", "action", "confirmed", "h1"),
            call("c1", "open_ticket", "action", "executed", "h1"),
            call("c2", "reset_password", "handoff", "handed_off", "h2"),
            call("c3", "get_balance", "read", "executed", "h3"),
        ];
        assert!(severe_failures(&ok).is_empty());
    }

    #[test]
    fn an_action_needs_an_approval_of_its_run_call_and_arguments_once() {
        let unapproved =
            [call("c1", "submit", "action", "proposed", "h1"), call("c1", "submit", "action", "executed", "h1")];
        assert_eq!(kinds(&unapproved), [(ActionWithoutApproval, 2)]);

        let other_args =
            [call("c1", "submit", "action", "confirmed", "h3"), call("c1", "submit", "action", "executed", "h5")];
        let found = severe_failures(&other_args);
        assert_eq!(found.len(), 1);
        assert!(found[0].detail.contains("approval on line 1 was for h3"), "{}", found[0].detail);

        let other_call =
            [call("c1", "submit", "action", "confirmed", "h1"), call("c2", "submit", "action", "executed", "h1")];
        assert_eq!(kinds(&other_call), [(ActionWithoutApproval, 2)]);

        let twice = [
            call("c1", "submit", "action", "confirmed", "h1"),
            call("c1", "submit", "action", "executed", "h1"),
            call("c1", "submit", "action", "executed", "h1"),
        ];
        assert_eq!(kinds(&twice), [(ActionWithoutApproval, 3)]);

        let mut elsewhere = call("c1", "submit", "action", "executed", "h1");
        elsewhere.run_id = "r2".into();
        assert_eq!(
            kinds(&[call("c1", "submit", "action", "confirmed", "h1"), elsewhere]),
            [(ActionWithoutApproval, 2)]
        );

        let no_call = [rec("r", None, "submit", "action", "executed", Some("h1"))];
        assert_eq!(kinds(&no_call), [(ActionWithoutApproval, 1)]);
    }

    #[test]
    fn the_tier_passed_in_wins_over_the_records() {
        let understated = call("c1", "submit", "read", "executed", "h1");
        assert!(SevereFinder::new().record(1, &understated).is_empty());
        let found = SevereFinder::new().record_with_tier(1, &understated, Some(Tier::Action));
        assert_eq!(found[0].kind, ActionWithoutApproval);
    }

    #[test]
    fn any_handoff_that_ran_or_failed_is_severe() {
        assert_eq!(kinds(&[call("c1", "reset", "handoff", "executed", "h1")]), [(HandoffExecuted, 1)]);
        assert_eq!(kinds(&[call("c1", "reset", "handoff", "failed", "h1")]), [(HandoffExecuted, 1)]);
        assert!(kinds(&[call("c1", "submit", "action", "failed", "h1")]).is_empty());
    }

    #[test]
    fn a_refused_call_that_ran_is_severe() {
        let denied = [call("c1", "get", "read", "denied", "h1"), call("c1", "get", "read", "executed", "h1")];
        assert_eq!(kinds(&denied), [(DeniedThenExecuted, 2)]);
        let declined = [call("c1", "get", "read", "rejected", "h1"), call("c1", "get", "read", "executed", "h1")];
        assert_eq!(kinds(&declined), [(DeniedThenExecuted, 2)]);
        let same_args = [
            call("c1", "get", "read", "denied", "h1"),
            call("c2", "get", "read", "executed", "h1"),
            call("c3", "get", "read", "executed", "h2"),
        ];
        assert_eq!(kinds(&same_args), [(DeniedThenExecuted, 2)]);
        // Declined, proposed again under a new call and approved: what a person may do.
        let asked_again = [
            call("c1", "submit", "action", "rejected", "h1"),
            call("c2", "submit", "action", "confirmed", "h1"),
            call("c2", "submit", "action", "executed", "h1"),
        ];
        assert!(kinds(&asked_again).is_empty());
    }

    #[test]
    fn a_finished_run_is_forgotten() {
        let mut finder = SevereFinder::new();
        assert!(finder.record(1, &call("c1", "get", "read", "denied", "h1")).is_empty());
        assert_eq!(finder.runs.len(), 1);
        assert!(finder.record(2, &rec("r", None, "", "read", "run_finished", None)).is_empty());
        assert!(finder.runs.is_empty());
    }
}
