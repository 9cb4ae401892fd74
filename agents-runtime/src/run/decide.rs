//! The runtime's decisions API: what a decider may list ([`Runtime::pending_decisions`]) and
//! how a decision reaches the state store from any node ([`Runtime::decide_async`]).

use super::decision::{DeciderView, DecisionError, Verdict};
use super::ledger::{acknowledged, decide_in_store, first_approval_in_store};
use super::pending::{PendingDecision, detail, detail_str, principal_of, unavailable};
use super::runtime::Runtime;
use crate::store::ProposalState;
use agents_core::Principal;
use serde_json::Value;

impl Runtime {
    /// The proposals waiting for `principal`'s decision: those of runs acting for the same
    /// user, organisation and role (the only principal whose decision is accepted), oldest
    /// first, from the state store, so every node sharing the store lists them, including
    /// those of a run whose process is gone (a decision on one is carried out by
    /// [`Runtime::resume_orphaned`]).
    ///
    /// Conversational proposals (answered by the user's next message) are listed too, from
    /// the moment they are proposed until they are answered or end: a person who reloads the
    /// page, or comes back after a restart of the service, finds them here, and may answer
    /// them here or in the conversation (whichever comes first holds; an approved call is
    /// carried out exactly once, see [`Runtime::resume_orphaned`]).
    ///
    /// ```no_run
    /// # async fn f(rt: agents_runtime::Runtime, me: agents_runtime::Principal) {
    /// for p in rt.pending_decisions(&me).await.unwrap() {
    ///     println!("{} wants to {} ({})", p.agent, p.title, p.call_id);
    /// }
    /// # }
    /// ```
    pub async fn pending_decisions(&self, principal: &Principal) -> Result<Vec<PendingDecision>, DecisionError> {
        let store = &self.inner.services.store;
        let pending = store.pending_for(&principal.org_id, &principal.user_id).await.map_err(unavailable)?;
        Ok(pending
            .into_iter()
            .filter(|p| detail_str(p, detail::ROLE) == principal.role)
            .map(|p| PendingDecision {
                agent: detail_str(&p, detail::AGENT).to_owned(),
                risk: detail_str(&p, detail::RISK).to_owned(),
                decider_arguments: DeciderView::new(p.detail.get(detail::ARGUMENTS).cloned().unwrap_or(Value::Null)),
                proposed_at: detail_str(&p, detail::PROPOSED_AT).to_owned(),
                acknowledge: Some(detail_str(&p, detail::ACKNOWLEDGE).to_owned()).filter(|w| !w.is_empty()),
                call_id: p.call_id,
                run_id: p.run_id,
                session_id: Some(p.session_id),
                why: p.detail.get(detail::WHY).and_then(Value::as_str).map(str::to_owned),
                origins: p.detail.get(detail::ORIGINS).and_then(|o| serde_json::from_value(o.clone()).ok()),
                tool: p.tool,
                title: p.title,
                arguments: p.args,
            })
            .collect())
    }

    /// Records a person's decision on a pending action, through the state store, so it is
    /// accepted on any node sharing the store: the run waiting for it (on this node or
    /// another) goes on, or, when that run's process is gone, [`Runtime::resume_orphaned`]
    /// carries out an approved call. Accepted only from the principal the run acts for (same
    /// user, organisation and role; [`DecisionError::NotYourRun`] otherwise, and nothing
    /// changes), and only once ([`DecisionError::NotPending`] for a proposal decided already,
    /// by whatever node or channel). `reason` is kept with a rejection and written in the call's
    /// `rejected` record (`"the user declined: <reason>"`), by the run or, when its process is
    /// gone, by [`Runtime::resume_orphaned`].
    ///
    /// A runtime that reads principals again
    /// ([`RuntimeBuilder::reread_principal`](super::RuntimeBuilder::reread_principal)) asks its
    /// source first: when the run's user is gone or holds another role, the decision is refused
    /// ([`DecisionError::AuthorityChanged`], saying why) and the proposal ends, with the user's
    /// other proposals made under the old authority. ([`Runtime::decide`], which does not wait,
    /// hands the verdict to the waiting call, whose approved action reads the principal again
    /// before it runs.)
    ///
    /// An approval of a proposal the application's policy asks a second confirmation of
    /// ([`UntrustedPolicy::SecondConfirmation`](crate::untrusted::UntrustedPolicy::SecondConfirmation))
    /// is its first approval: recorded (`first_approval`), it decides nothing and is answered
    /// with [`DecisionError::AcknowledgementRequired`], whose acknowledgement
    /// [`Runtime::acknowledge`] then takes (see [`crate::untrusted`]).
    pub async fn decide_async(
        &self,
        call_id: &str,
        decider: &Principal,
        verdict: Verdict,
        reason: Option<&str>,
    ) -> Result<(), DecisionError> {
        let found = self.decidable(call_id, decider).await?;
        let p = &found.proposal;
        if verdict == Verdict::Approve
            && let Some(ack) = first_approval_in_store(&self.inner, p).await?
        {
            return Err(DecisionError::AcknowledgementRequired(Box::new(ack)));
        }
        decide_in_store(&self.inner, p, verdict, reason).await
    }

    /// The second approval of a proposal that needs a second confirmation (see
    /// [`crate::untrusted`]): `digest` must be the one the person's first approval was answered
    /// with ([`DecisionError::AcknowledgementRequired`]); it is bound to this proposal, its
    /// person and its warning, so another's is refused with
    /// [`DecisionError::AcknowledgementMismatch`] and changes nothing. Accepted from the same
    /// principal as [`Runtime::decide_async`], on any node sharing the state store and the
    /// server key; the run's `confirmed` record then says the warning was acknowledged. (A
    /// rejection needs no acknowledgement: decline with [`Runtime::decide_async`].)
    pub async fn acknowledge(&self, call_id: &str, decider: &Principal, digest: &str) -> Result<(), DecisionError> {
        let found = self.decidable(call_id, decider).await?;
        if !acknowledged(&self.inner, &found.proposal, digest) {
            tracing::warn!(call_id, decider = %decider.user_id, "an acknowledgement that does not match refused");
            return Err(DecisionError::AcknowledgementMismatch(call_id.to_owned()));
        }
        decide_in_store(&self.inner, &found.proposal, Verdict::Approve, None).await
    }

    /// The stored proposal `call_id`, undecided, when `decider` may decide it: the run's own
    /// user, organisation and role, under an authority that still holds.
    async fn decidable(&self, call_id: &str, decider: &Principal) -> Result<ProposalState, DecisionError> {
        let not_pending = || DecisionError::NotPending(call_id.to_owned());
        let store = &self.inner.services.store;
        let found = store.proposal(call_id).await.map_err(unavailable)?.ok_or_else(not_pending)?;
        let p = &found.proposal;
        let theirs = p.user_id == decider.user_id && p.org_id == decider.org_id;
        let refused = || {
            tracing::warn!(call_id, decider = %decider.user_id, "decision from another principal refused");
            DecisionError::NotYourRun
        };
        if !theirs {
            return Err(refused());
        }
        // Who the run acts for, read again when the runtime is told to: a changed authority
        // decides nothing, and ends what waits under it (asked before the role is compared,
        // so the user deciding under their new role learns why).
        let held = principal_of(p);
        if found.verdict.is_none()
            && let Some(reason) = self.inner.authority_changed(&held).await
        {
            self.inner.end_for_authority(call_id, &reason).await;
            self.inner.end_under_authority(&held, &reason).await;
            return Err(DecisionError::AuthorityChanged(reason));
        }
        if detail_str(p, detail::ROLE) != decider.role {
            return Err(refused());
        }
        if found.verdict.is_some() {
            return Err(not_pending());
        }
        Ok(found)
    }
}
