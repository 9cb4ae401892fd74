//! A run tree's own model calls (a branch's model router, see [`crate::compose`]): made with
//! the runtime's provider, for the tree's principal, within what is left of the tree's
//! allowance and of the principal's budget (reserved and settled in the budget store as any
//! run's call is), within the runtime's provider timeout, and unless the tree is stopped. A
//! panicking provider fails the call, not the tree.

use super::limit::TreeAllowance;
use super::outcome::RunUsage;
use super::runtime::Runtime;
use super::spend::{BudgetStop, charged, reserve_in_store, settle_in_store};
use super::sync::unless_cancelled;
use crate::provider::{ChatRequest, ChatResponse};
use agents_core::Principal;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Why a run tree's model call gave no answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TreeCallError {
    /// The tree was stopped while the call was made.
    Stopped,
    /// The tree's allowance or the principal's budget refuses the call (it was not made).
    Budget(String),
    /// The budget store failed and the runtime fails closed (the call was not made).
    Unavailable(String),
    /// The provider failed, panicked or did not answer within the timeout.
    Failed(String),
}

/// What one run tree model call gave and spent.
#[derive(Debug)]
pub(crate) struct TreeCall {
    pub(crate) answer: Result<ChatResponse, TreeCallError>,
    /// Its tokens and cost (added to the tree's allowance already).
    pub(crate) usage: RunUsage,
    /// The `notice`s the call leaves (the budget store failed and the call was made uncounted;
    /// the provider reported an invalid cost).
    pub(crate) notices: Vec<String>,
}

impl Runtime {
    /// Makes `request` with the runtime's provider for `principal`, within `allowance` and the
    /// principal's budget, unless `cancel` is cancelled first.
    pub(crate) async fn tree_chat(
        &self,
        principal: &Principal,
        allowance: &TreeAllowance,
        cancel: &CancellationToken,
        request: &ChatRequest,
    ) -> TreeCall {
        let (inner, mut notices) = (&self.inner, Vec::new());
        let usage = RunUsage::default();
        let hold = match allowance.reserve(0.0) {
            Ok(hold) => hold,
            Err(why) => return TreeCall { answer: Err(TreeCallError::Budget(why)), usage, notices },
        };
        let provider = &*inner.services.provider;
        let reserved = match reserve_in_store(inner, principal, provider, 0.0).await {
            Ok(reserved) => reserved,
            Err(stop) => {
                allowance.settle(Some(hold), usage);
                let answer = match stop {
                    BudgetStop::StoreFailed(_) => Err(TreeCallError::Unavailable(stop.to_string())),
                    _ => Err(TreeCallError::Budget(stop.to_string())),
                };
                return TreeCall { answer, usage, notices };
            }
        };
        notices.extend(reserved.fail_open);
        let secs = inner.settings.limits.unwrap_or_default().provider_timeout_secs;
        let ignore = |_: &str| {};
        let call = tokio::time::timeout(
            Duration::from_secs(secs),
            crate::provider::chat_contained(provider, request, &ignore),
        );
        let answer = unless_cancelled(cancel, call).await;
        let reported = match &answer {
            Some(Ok(Ok(r))) => r.usage.cost_usd,
            _ => 0.0,
        };
        let (cost, invalid) = charged(reported, reserved.reservation.as_ref());
        notices.extend(invalid);
        settle_in_store(inner, principal, reserved.reservation, cost).await;
        let mut usage = RunUsage { cost_usd: cost, ..RunUsage::default() };
        if let Some(Ok(Ok(r))) = &answer {
            (usage.input_tokens, usage.output_tokens) = (r.usage.input_tokens, r.usage.output_tokens);
        }
        allowance.settle(Some(hold), usage);
        let answer = match answer {
            None => Err(TreeCallError::Stopped),
            Some(Ok(Ok(r))) => Ok(r),
            Some(Ok(Err(e))) => Err(TreeCallError::Failed(e.to_string())),
            Some(Err(_)) => Err(TreeCallError::Failed(format!("no answer within {secs} s"))),
        };
        TreeCall { answer, usage, notices }
    }
}
