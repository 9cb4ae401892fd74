//! The claims of a stored proposal's execution and of its final record: recording a
//! conversational approval and claiming its execution for this node ([`claim_in_store`]),
//! and keeping a claim of a final record from lapsing while it is carried out
//! ([`ClaimHeartbeat`]).

use crate::run::context::RunCtx;
use crate::run::pending::seal;
use crate::store::{DecideOutcome, ProposalRecord, Store};
use crate::tool::Registry;
use std::sync::Arc;

/// Keeps a claim of a final record this node holds from lapsing while it carries the claim
/// out (an execution may outlast the [settle lease](crate::run::RuntimeBuilder::settle_lease)):
/// renews it in the store ([`Store::renew_claim`], one conditional update that holds only
/// while this node is still the holder) every third of the lease, until dropped. A node that
/// dies stops renewing, so its claim still lapses and is taken over. Without a tokio runtime,
/// or with a zero lease, it does nothing.
pub(in crate::run) struct ClaimHeartbeat(Option<tokio::task::JoinHandle<()>>);

impl ClaimHeartbeat {
    /// Starts renewing `call_id`'s claim, held by `node`.
    pub(in crate::run) fn start(store: &Arc<dyn Store>, lease: std::time::Duration, call_id: &str, node: &str) -> Self {
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return ClaimHeartbeat(None) };
        if lease.is_zero() {
            return ClaimHeartbeat(None);
        }
        let (store, call_id, node) = (store.clone(), call_id.to_owned(), node.to_owned());
        ClaimHeartbeat(Some(handle.spawn(async move {
            loop {
                tokio::time::sleep(lease / 3).await;
                match store.renew_claim(&call_id, &node).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(
                            call_id,
                            "the claim of a final record is no longer this node's (its record is written, or another \
                             node took the claim over after it lapsed); it is not renewed any more"
                        );
                        return;
                    }
                    Err(e) => tracing::warn!(call_id, error = %e, "the claim of a final record could not be renewed"),
                }
            }
        })))
    }
}

impl Drop for ClaimHeartbeat {
    fn drop(&mut self) {
        if let Some(beat) = self.0.take() {
            beat.abort();
        }
    }
}

/// Records a conversational approval in the state store and claims the call's execution for
/// this node: the stored proposal for exactly one claim, ever, of everyone answering the
/// proposal (the user's messages on any node, the decisions API and a resumption); why not
/// otherwise.
///
/// The stored row must be this run's principal's, as a key holder wrote it: a seal that
/// verifies for its state (see [`seal`]). The caller then holds the call it runs to the row's
/// tool and arguments' MAC.
pub(in crate::run) async fn claim_in_store<A: Registry>(
    ctx: &RunCtx<A>,
    call_id: &str,
) -> Result<ProposalRecord, String> {
    let (store, principal, tokens) = (&ctx.inner.services.store, &ctx.principal, &ctx.inner.services.tokens);
    let unavailable = |e: crate::store::StoreError| format!("the state store could not record the approval ({e})");
    let approved = crate::store::StoredVerdict::Approved;
    let gone = || "the proposal is not held by the state store any more".to_owned();
    // The row as a key holder wrote it, for this run's principal.
    let ours = |p: &ProposalRecord| p.org_id == principal.org_id && p.user_id == principal.user_id;
    let read = || async { store.proposal(call_id).await.map_err(unavailable)?.ok_or_else(gone) };
    let mut found = read().await?;
    if found.verdict.is_none() {
        if !ours(&found.proposal) || !seal::holds_proposed(tokens, &found.proposal) {
            return Err(seal::FORGED.to_owned());
        }
        let sealed = seal::decided(tokens, &found.proposal, approved);
        let (org, user) = (&principal.org_id, &principal.user_id);
        match store.decide(call_id, org, user, approved, None, &sealed).await.map_err(unavailable)? {
            DecideOutcome::Recorded => found.proposal.seal = sealed,
            DecideOutcome::AlreadyDecided => found = read().await?,
            DecideOutcome::Unknown | DecideOutcome::NotYours => return Err(gone()),
        }
        if found.verdict.is_none() {
            found.verdict = Some(approved);
        }
    }
    if found.verdict != Some(approved) {
        return Err("the proposal was rejected or ended outside this conversation".to_owned());
    }
    if !ours(&found.proposal) || !seal::holds_approval(tokens, &found.proposal) {
        return Err(seal::FORGED.to_owned());
    }
    let node = ctx.inner.settings.node_id.as_str();
    let sealed = seal::claimed(tokens, &found.proposal, node);
    match store.claim_execution(call_id, node, &sealed).await.map_err(unavailable)? {
        // The execution's final record, once in the log, marks the claim written.
        true => {
            ctx.inner.live.settling.insert(call_id.to_owned());
            Ok(found.proposal)
        }
        false => {
            Err("the approved action was carried out already, or ended; its outcome is in the audit log".to_owned())
        }
    }
}
