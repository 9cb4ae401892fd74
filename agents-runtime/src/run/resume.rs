//! Settling the proposals whose run is gone: the run that proposed an action waits for the
//! decision while its process lives; when the process died (a crash, `kill -9`, a restart)
//! the proposal stays in the state store, listed and decidable on every node, and
//! [`Runtime::resume_orphaned`] gives each one its final record, exactly once: it carries out
//! the approved ones, records the rejected ones `rejected` (with the reason the person gave),
//! and ends those whose confirmation window passed undecided as `skipped` (reason
//! `timeout: ...`, see [`Undecided::TimedOut`](super::Undecided::TimedOut)).
//!
//! A proposal is orphaned when nobody claimed its final record (its execution, for an
//! approved one) and the run slot of the run that proposed it has lapsed (its process stopped renewing the lease, see
//! [`RuntimeBuilder::run_slot_lease`](super::RuntimeBuilder::run_slot_lease)). The execution is
//! claimed in the store first (one conditional update: of any number of nodes resuming, and
//! the original run should it come back, exactly one runs it), then carried out as the run
//! would have: under the run's own principal and session, with a token bound to the stored
//! arguments' MAC minted and redeemed, the permission and the availability (role and disable
//! list) checked again, and its records (`confirmed`, then `executed` or `failed`) written
//! under the run's id and the runtime's call id. A rejected proposal's record is claimed the
//! same way ([`Store::claim_settlement`](crate::store::Store::claim_settlement)), and an
//! undecided one past its window is ended and claimed in one conditional update
//! ([`Store::close_undecided`](crate::store::Store::close_undecided)): the run itself (should
//! it come back), the person deciding late, and every resuming node race for the same claim,
//! and only the winner writes the final record.
//!
//! The claim and the record are two steps (the record may go to a log the store does not
//! hold), so the holder marks the record written in the store once the log took it
//! ([`Store::mark_recorded`](crate::store::Store::mark_recorded)). A claim left unmarked for
//! longer than the [settle lease](super::RuntimeBuilder::settle_lease) (its holder died
//! between the claim and the record, or the log refused the record), whose run's slot has
//! lapsed, is taken over ([`Store::take_over`](crate::store::Store::take_over), one
//! conditional update) by one resuming node, which writes the final record from what the store
//! knows: a rejection `rejected` with the person's reason, a closed proposal `skipped` with its
//! typed reason, an approval withdrawn by its run `skipped`, and an approved execution whose
//! holder died `failed` with reason `abandoned: ...` (it may have run; it is never run again).
//!
//! Before writing, the taker asks the log whether the record is there already (the holder
//! died after its record and before its mark), and then only marks it. A live holder keeps
//! its claim from lapsing: while it carries out an execution (a resumption's, a
//! conversational approval's, a dialog approval's) or writes a resumption's record, it renews
//! the claim every third of the lease ([`Store::renew_claim`](crate::store::Store::renew_claim),
//! one conditional update that holds only while it is still the holder), so a call that runs
//! longer than the lease is not taken over, and a holder that died stops renewing. The exact
//! guarantee is stated on [`Runtime::resume_orphaned`].
//!
//! A resumption reads the store page by page ([`RESUME_BATCH`] proposals at a time) until it
//! has seen every unsettled proposal and every lapsed claim, so proposals it leaves alone
//! (conversational ones still waiting for their user, those of live runs or of other agents)
//! never keep it from the ones stored after them.
//!
//! A conversational proposal (one the user answers with their next message) is orphaned in
//! the same way once the turn that proposed it ended: approved through the decisions API, it
//! is carried out here, exactly once (the conversation's own "yes" claims the same execution);
//! rejected, it is recorded here; undecided, it is left alone while its session still holds it
//! for the user's answer, and ended (`skipped`, reason `timeout: ...`) once the session no
//! longer does (it idled out, ended, or moved on) and the confirmation window passed.
//!
//! A call whose final record could not be written at all (its read call's `executed` record
//! lost with the connection, say) is owed it: a store's audit stream keeps the debt of every
//! `proposed` record until its final record is appended, in the same transaction, and the
//! resumption writes what is owed past the settle lease (see [`Runtime::resume_orphaned`]).
//!
//! A node of a composite's run tree (see [`crate::compose`]) settles the same way: its
//! proposal keeps the node's place in the tree beside it in the store (the tree's run id, the
//! node's path, the composite's name and hash, with a MAC under the server key, and sealed
//! with the proposal), so the records a resumption writes for it (`confirmed`, `executed`,
//! `failed`, `rejected`, `skipped`) carry [`AuditRecord::node`](crate::audit::AuditRecord::node)
//! as the live run's would have. A place edited in the store without the key is not recorded,
//! and an approval of such a row runs nothing. Once the call's final record is written, the
//! resumption closes the tree: its root run gets a `run_finished` record (reason `failed`,
//! its result naming the node and the call and saying how it was settled), unless another
//! proposal of the same tree still waits in the store (a parallel node's other member), in
//! which case that one's settlement closes it. Two nodes settling the last two waiting
//! proposals of one tree at the same moment both find none left; the store's
//! [`claim_tree_close`](crate::store::Store::claim_tree_close) lets exactly one of them close
//! it, so the root's `run_finished` is written once. The tree's plan does not go on
//! after a restart, as a single run's conversation does not: its later nodes never start,
//! and a new tree is the application's to start.
//!
//! What is not resumed: the model's turn (it is over; the session's next turn goes on from
//! the session's history, on any node), and proposals of direct sessions (their caller is
//! gone with them; they hold no run slot). A claim a direct session's call left unwritten is
//! taken over like any other once the settle lease ran out.

use super::carry::carry_out;
use super::decision::Undecided;
use super::ledger::{Resumed, ResumedCall, resume_one, take_over_one};
use super::pending::principal_of;
use super::place::{TreePlace, place_of};
use super::runtime::Runtime;
use crate::audit::AuditStatus;
use crate::store::{ProposalCursor, ProposalRecord, StoreError};
use crate::tool::Registry;
use serde_json::json;

/// What [`Runtime::prune_state`] dropped from the state store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pruned {
    /// Confirmation tokens redeemed or expired.
    pub tokens: u64,
    /// Sessions unused for longer than the session idle timeout.
    pub sessions: u64,
    /// Proposals over for longer than the proposal retention.
    pub proposals: u64,
}

/// How many proposals [`Runtime::resume_orphaned`] reads from the store at once: it reads
/// page after page until it has looked at every one, so however many wait for their user (a
/// conversational proposal its session still holds, a live run's), the ones after them are
/// settled in the same pass.
pub const RESUME_BATCH: u32 = 100;

impl Runtime {
    /// Settles the proposals of agent `A` whose run is gone (see the rules in
    /// [`ResumedCall`]'s module: nobody claimed their final record, the proposing run's slot
    /// lapsed): carries out the approved ones, records the rejected ones `rejected` with the
    /// reason given, and ends the undecided ones older than the confirmation timeout as
    /// `skipped`; each exactly once across every node sharing the state store. Returns what
    /// happened to each proposal this node claimed. Proposals of other agents, or of another
    /// build of `A` (another manifest), are left alone. A service calls it on start and on a
    /// timer, for every agent it serves (`agents_service` does).
    ///
    /// A claim of a final record whose holder died before writing it (the claim and the
    /// record are two steps: the log may be a file the store does not hold) is taken over
    /// here too: the holder marks the record written in the store once the log took it
    /// ([`Store::mark_recorded`](crate::store::Store::mark_recorded)); a claim left unmarked
    /// for longer than the [settle lease](super::RuntimeBuilder::settle_lease), whose run's
    /// slot has lapsed, is taken over by one node
    /// ([`Store::take_over`](crate::store::Store::take_over)), which writes the record from
    /// what the store knows (`rejected` with the person's reason; `skipped` with a closed
    /// proposal's typed reason; for an approved execution whose holder died, `failed` with
    /// reason `abandoned: ...`, since it may have run, and it is never run again).
    ///
    /// Before it writes, the taker asks the log whether the record is there already
    /// ([`AuditSink::holds_final`](crate::audit::AuditSink::holds_final): the holder died
    /// after its record reached the log and before its mark); if so it only marks it.
    ///
    /// While it carries out an execution (a resumption's, a conversational approval's, a
    /// dialog approval's) or writes a resumption's record, the holder renews its claim every
    /// third of the settle lease ([`Store::renew_claim`](crate::store::Store::renew_claim)),
    /// so a live holder's claim does not lapse however long the call runs, and a dead
    /// holder's does. One pass reads every unsettled proposal and every lapsed claim, page by
    /// page ([`RESUME_BATCH`] at a time): however many wait for their user, the ones after
    /// them are settled in the same pass.
    ///
    /// The guarantee: every stored proposal gets exactly one final record, except in two
    /// cases that can leave it two:
    ///
    /// - a holder that dies between its record and its mark when the audit sink cannot be
    ///   searched (a custom sink without `holds_final`; the JSONL, SQLite and memory sinks and
    ///   the store's own streams can);
    /// - a holder that is alive but renews nothing for a whole settle lease (about three
    ///   renewals missed in a row) while the proposing run's slot has lapsed and another node
    ///   resumes: its process paused (stopped, suspended) or cut off from the state store for
    ///   that long, or, for a claim it does not renew (a live run's rejection or closing
    ///   record, which its run's slot covers while the run lives; a direct session's, which
    ///   has no slot), its one audit append taking that long. The other node takes the claim
    ///   over and writes the record from what the store knows (for an execution, `failed`
    ///   with reason `abandoned: ...`; the call is not run again), and the holder, once it
    ///   goes on, writes its own.
    ///
    /// Last, it writes the final records the audit log still owes
    /// ([`AuditSink::owed_finals`](crate::audit::AuditSink::owed_finals), kept by a store's
    /// stream in the transaction that appends each record): a `proposed` record whose call has
    /// no kept proposal and whose final record's write failed (the connection to the database
    /// dropped, the node died) more than a settle lease ago is claimed by one node
    /// ([`AuditSink::claim_owed`](crate::audit::AuditSink::claim_owed)) and gets `skipped` (an
    /// action: it never runs without a kept proposal) or `failed` (a read call: it may have
    /// run), reason `abandoned: ...`. A call still running when its debt is a settle lease old
    /// gets that record and then its own (the second case above, for calls without a claim).
    ///
    /// A live run whose claim fails with a store error writes no record
    /// ([`RunError::StateUnavailable`](super::RunError::StateUnavailable)); the proposal is
    /// settled here.
    ///
    /// An approved row is carried out only when its seal verifies under this runtime's server
    /// key for the row as read (proposal, verdict and decider; see
    /// [`ProposalRecord::seal`](crate::store::ProposalRecord::seal)) and the stored arguments
    /// hash to its MAC; otherwise it ends `failed`, nothing ran. Before it runs, the log is
    /// asked whether the call has its final record already (a row put back to an earlier
    /// state in the store); if so it is not run again and gets no second record. Give every
    /// node the same [`RuntimeBuilder::server_key`](super::RuntimeBuilder::server_key) (a
    /// random per-process key cannot resume anything).
    pub async fn resume_orphaned<A: Registry>(&self) -> Result<Vec<ResumedCall>, StoreError> {
        crate::tool::verified_registry::<A>().map_err(|e| StoreError::Invalid(e.to_string()))?;
        let store = &self.inner.services.store;
        let window =
            std::time::Duration::from_secs(self.inner.settings.limits.unwrap_or(A::SPEC.limits).confirm_timeout_secs);
        let mut done = Vec::new();
        // Page after page: proposals left alone below never hide the ones after them.
        let mut after = ProposalCursor::START;
        loop {
            let page = store.unsettled(after, RESUME_BATCH, window).await?;
            for found in page.proposals {
                let place = place_of(&self.inner.services.tokens, &found.proposal).map(|t| (t, found.proposal.clone()));
                let call = match resume_one::<A>(&self.inner, found).await? {
                    Resumed::Carry(p) => carry_out::<A>(&self.inner, p, None).await,
                    Resumed::Settled(call) => call,
                    Resumed::Left => continue,
                };
                if let Some((place, p)) = place.filter(|_| call.recorded) {
                    self.close_tree(&place, &p, &call, window).await?;
                }
                done.push(call);
            }
            match page.next {
                Some(next) => after = next,
                None => break,
            }
        }
        // Claims whose holder died between the claim and the record: taken over once the
        // settle lease ran out (and, for a live run's, once its slot lapsed).
        let mut after = ProposalCursor::START;
        loop {
            let page = store.stale_claims(after, RESUME_BATCH, self.inner.settings.settle_lease).await?;
            for found in page.proposals {
                done.extend(take_over_one::<A>(&self.inner, found).await?);
            }
            match page.next {
                Some(next) => after = next,
                None => break,
            }
        }
        self.settle_owed(&mut done).await?;
        Ok(done)
    }

    /// [`Runtime::resume_orphaned`] for every agent node of composite `C`, nested composites'
    /// included, in the order the graph names them (an agent named by several nodes once): a
    /// node's proposal whose run tree's process is gone is settled, and its tree's root run
    /// closed, as a single run's. What each node's resumption settled, in that order; the
    /// first store error stops it (the next round takes up the rest).
    ///
    /// ```no_run
    /// # async fn f<C: agents_runtime::compose::RunComposite>(runtime: agents_runtime::Runtime) -> Result<(), agents_runtime::store::StoreError> {
    /// for call in runtime.resume_orphaned_composite::<C>().await? {
    ///     println!("{} settled as {:?}", call.call_id, call.status);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn resume_orphaned_composite<C: crate::compose::RunComposite>(
        &self,
    ) -> Result<Vec<ResumedCall>, StoreError> {
        C::resume_nodes(self).await
    }

    /// Closes the run tree a settled proposal's node run sat in (see the module's docs): its
    /// root run gets its `run_finished` record (reason `failed`, saying which node's call was
    /// settled and how), unless another proposal of the same tree still waits in the store
    /// (its settlement closes the tree), and unless another node claimed the closing first. The
    /// tree's plan does not go on.
    async fn close_tree(
        &self,
        place: &TreePlace,
        p: &ProposalRecord,
        settled: &ResumedCall,
        window: std::time::Duration,
    ) -> Result<(), StoreError> {
        let (store, tokens) = (&self.inner.services.store, &self.inner.services.tokens);
        let tree = place.tree_run_id();
        let mut after = ProposalCursor::START;
        loop {
            let page = store.unsettled(after, RESUME_BATCH, window).await?;
            let waits = page.proposals.iter().any(|other| {
                other.proposal.call_id != p.call_id
                    && place_of(tokens, &other.proposal).is_some_and(|o| o.tree_run_id() == tree)
            });
            if waits {
                return Ok(());
            }
            match page.next {
                Some(next) => after = next,
                None => break,
            }
        }
        // Two nodes settling the tree's last two proposals at once both get here: the store
        // lets one of them close it.
        if !store.claim_tree_close(tree, &self.inner.settings.node_id).await? {
            return Ok(());
        }
        let composite = (place.composite.as_str(), place.composite_sha256.as_str());
        let ids = self.tree_ids(tree, &p.session_id, &principal_of(p), composite);
        let why = format!(
            "the run tree's process stopped while node `{}` waited for a decision; call {} was settled by a \
             resumption ({}) and the tree does not go on",
            place.node.path,
            settled.call_id,
            settled.status.as_str()
        );
        let ended = json!({"interrupted": why, "node": place.node.path, "call_id": settled.call_id});
        let reason = Some(super::RunStatus::Failed.as_str().to_owned());
        self.tree_record(&ids, AuditStatus::RunFinished, reason, Some(ended)).await;
        Ok(())
    }

    /// Writes the final records the audit log still owes (see
    /// [`AuditSink::owed_finals`](crate::audit::AuditSink::owed_finals)): `proposed` records
    /// without a final record and without a kept proposal, owed longer than the settle lease
    /// (their writer's final record failed, or it died). Each is claimed first (one claimer per
    /// lease, on any node), then written from the `proposed` record itself: an action (never
    /// run without a kept proposal) `skipped`, any other call `failed`, both with reason
    /// `abandoned: ...`. The record pays the debt in the transaction that appends it.
    async fn settle_owed(&self, done: &mut Vec<ResumedCall>) -> Result<(), StoreError> {
        let (audit, node, lease) =
            (&self.inner.services.audit, self.inner.settings.node_id.as_str(), self.inner.settings.settle_lease);
        let refused = |e: crate::audit::AuditError| StoreError::Unavailable(e.to_string());
        let owed = audit.owed_finals(lease, RESUME_BATCH).await.map_err(refused)?;
        for proposed in owed {
            let Some(call_id) = proposed.call_id.clone() else { continue };
            if !audit.claim_owed(&call_id, &proposed.run_id, node, lease).await.map_err(refused)? {
                continue;
            }
            let (status, reason) = if proposed.tier == Some(agents_core::Tier::Action) {
                (
                    AuditStatus::Skipped,
                    format!(
                        "{}: the call's proposal was not kept and its run stopped before writing its final record; \
                         nothing ran",
                        Undecided::Abandoned.code()
                    ),
                )
            } else {
                (
                    AuditStatus::Failed,
                    format!(
                        "{}; its run stopped before its final record was written (the tool may have run)",
                        Undecided::Abandoned.reason()
                    ),
                )
            };
            tracing::warn!(%call_id, ?status, "a `proposed` record was owed its final record; writing it");
            let record = crate::audit::AuditRecord {
                seq: 0,
                ts: super::record::now_rfc3339(),
                status,
                reason: Some(reason.clone()),
                result: None,
                prev_hash: String::new(),
                hash: String::new(),
                ..proposed.clone()
            };
            crate::telemetry::audited(status, proposed.tool.as_deref(), None);
            let recorded = match audit.append(record).await {
                Ok(_) => true,
                Err(e) => {
                    tracing::error!(%call_id, error = %e, "an owed final record could not be written; a later pass retries");
                    false
                }
            };
            done.push(ResumedCall {
                call_id: call_id.to_string(),
                run_id: proposed.run_id.to_string(),
                tool: proposed.tool.as_deref().unwrap_or_default().to_owned(),
                status,
                reason: Some(reason),
                recorded,
            });
        }
        Ok(())
    }

    /// Drops from the state store what can no longer be used, on every node's behalf:
    /// redeemed and expired confirmation tokens, sessions unused for longer than the
    /// [session idle timeout](super::RuntimeBuilder::session_idle_timeout), and proposals over
    /// for longer than the [proposal retention](super::RuntimeBuilder::proposal_retention)
    /// (an open proposal, or one whose final record nobody has claimed, is never dropped). A
    /// service calls it on a timer (`agents_service` does).
    pub async fn prune_state(&self) -> Result<Pruned, StoreError> {
        let store = &self.inner.services.store;
        Ok(Pruned {
            tokens: store.prune_tokens().await?,
            sessions: store.prune_sessions(self.inner.settings.session_idle_timeout).await?,
            proposals: store.prune_proposals(self.inner.settings.proposal_retention).await?,
        })
    }
}
