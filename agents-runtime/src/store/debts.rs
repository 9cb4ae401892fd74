//! What a run of sealed records changes in its stream's debts (see [`Debts`]).

use crate::audit::{AuditRecord, AuditStatus};

/// What a run of sealed records (a batch, or every record a store has not yet accounted for)
/// changes in its stream's debts, taken in `seq` order: the debts it pays (a final record pays
/// its call's debt, whether that debt was opened before the run or in it), then the calls it
/// leaves owed (a `proposed` record opens a debt, a final record later in the run closes it
/// again) with that record's `seq` and line. A store applies both in one transaction, the paid
/// ones first, and opens a debt only where its call has none in that run: a call already owed
/// keeps its first debt, so a second `proposed` record of it opens none. A call proposed again
/// after its final record (a model may repeat a call id) is owed again.
///
/// A debt is keyed by call id and run id: a read call's id is the model provider's, which
/// other runs reuse. An action's id is minted by the runtime (unique), and its final record may
/// be written under another run (a later turn of the session carries out a conversational
/// approval), so an action's final record (tier `action`, or none: a resumption's) pays by the
/// call id alone.
///
/// ```
/// use agents_runtime::audit::{AuditRecord, AuditStatus};
/// use agents_runtime::store::Debts;
///
/// let call = |seq: u64, status| AuditRecord {
///     seq,
///     ts: "2026-01-01T00:00:00Z".into(),
///     run_id: "run-1".into(),
///     session_id: "s".into(),
///     request_id: "req".into(),
///     call_id: Some("call-1".into()),
///     epoch: None,
///     user_id: "u".into(),
///     org_id: "o".into(),
///     role: "r".into(),
///     agent: "a".into(),
///     tool: Some("lookup".into()),
///     tier: Some(agents_runtime::Tier::Read),
///     status,
///     reason: None,
///     title: None,
///     args: None,
///     args_hash: None,
///     result: None,
///     import: None,
///     manifest_sha256: "m".into(),
///     prev_hash: String::new(),
///     hash: String::new(),
///     node: None,
/// };
/// let records = [call(1, AuditStatus::Proposed), call(2, AuditStatus::Executed), call(3, AuditStatus::Proposed)];
/// let lines = vec![String::new(); 3];
/// let debts = Debts::of(&records, &lines);
/// assert_eq!((debts.paid, debts.paid_runs), (vec!["call-1"], vec!["run-1"]), "a debt from before is paid");
/// assert_eq!((debts.owed, debts.owed_seqs), (vec!["call-1"], vec![3]), "proposed again after it: owed again");
/// ```
#[derive(Debug, Default)]
pub struct Debts<'a> {
    /// The call ids the records leave owed, each at its first `proposed` record after the
    /// last final record of its call (in its run) among them.
    pub owed: Vec<&'a str>,
    /// Their run ids, in the same order.
    pub owed_runs: Vec<&'a str>,
    /// Their records' `seq` (where the debt points), in the same order.
    pub owed_seqs: Vec<i64>,
    /// Their lines, in the same order.
    pub owed_lines: Vec<&'a str>,
    /// The call ids of the final records of actions: each pays its call's debt, in any run.
    pub paid_calls: Vec<&'a str>,
    /// The call ids of the other final records...
    pub paid: Vec<&'a str>,
    /// ...and their run ids: each pays the debt of its call in its run.
    pub paid_runs: Vec<&'a str>,
}

impl<'a> Debts<'a> {
    /// The debts of `sealed` records (in `seq` order) whose lines are `lines`.
    pub fn of(sealed: &'a [AuditRecord], lines: &'a [String]) -> Self {
        let mut debts = Debts::default();
        for (record, line) in sealed.iter().zip(lines) {
            let Some(call_id) = record.call_id.as_deref() else { continue };
            let run_id: &str = &record.run_id;
            if record.status == AuditStatus::Proposed {
                if !debts.owes(call_id, run_id) {
                    debts.owed.push(call_id);
                    debts.owed_seqs.push(record.seq as i64);
                    debts.owed_runs.push(run_id);
                    debts.owed_lines.push(line);
                }
            } else if !crate::audit::is_final_status(record.status) {
            } else if matches!(record.tier, None | Some(agents_core::Tier::Action)) {
                debts.close(|c, _| c == call_id);
                if !debts.paid_calls.contains(&call_id) {
                    debts.paid_calls.push(call_id);
                }
            } else {
                debts.close(|c, r| c == call_id && r == run_id);
                if !debts.paid.iter().zip(&debts.paid_runs).any(|(c, r)| *c == call_id && *r == run_id) {
                    debts.paid.push(call_id);
                    debts.paid_runs.push(run_id);
                }
            }
        }
        debts
    }

    /// Whether the records so far leave the call `call_id` of run `run_id` owed.
    fn owes(&self, call_id: &str, run_id: &str) -> bool {
        self.owed.iter().zip(&self.owed_runs).any(|(c, r)| *c == call_id && *r == run_id)
    }

    /// Closes the debts opened so far whose call and run `paid` matches.
    fn close(&mut self, paid: impl Fn(&str, &str) -> bool) {
        let mut i = 0;
        while i < self.owed.len() {
            if paid(self.owed[i], self.owed_runs[i]) {
                self.owed.remove(i);
                self.owed_runs.remove(i);
                self.owed_seqs.remove(i);
                self.owed_lines.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Whether the records change no debt.
    pub fn is_empty(&self) -> bool {
        self.owed.is_empty() && self.paid.is_empty() && self.paid_calls.is_empty()
    }
}
