//! Every paid model call of a run — the agent's and any auxiliary one, such as a
//! model-backed classifier's — is a budget event: headroom is reserved before the call
//! (estimated at the run's previous call's cost), the call is made, and the reservation is
//! settled with the call's actual cost, in the store and in the run's own total. See
//! [`crate::budget`] for the guarantee this gives under concurrency.

use super::context::RunCtx;
use super::limit::{TreeAllowance, TreeHold};
use super::outcome::RunUsage;
use super::record::RecordFields;
use super::shared::Inner;
use super::sync::lock;
use crate::BoxFuture;
use crate::audit::AuditStatus;
use crate::budget::{Admission, BudgetFallback, MeteredCalls, Reservation};
use crate::provider::{ChatRequest, ChatResponse, Provider, ProviderError};
use crate::tool::Registry;
use agents_core::Principal;
use std::sync::Mutex;
use std::time::Duration;

/// What a run has spent.
#[derive(Debug, Default)]
pub(super) struct Spend {
    /// The run's total, in USD.
    pub(super) cost_usd: f64,
    /// The latest paid call's cost: the estimate the next reservation holds.
    last_cost: f64,
    /// Prompt tokens of the run's model calls, as the providers reported them.
    pub(super) input_tokens: u64,
    /// Completion tokens.
    pub(super) output_tokens: u64,
    /// What of the above the run's tree ledger has already (see [`Spend::push_to_tree`]).
    in_tree: RunUsage,
}

impl Spend {
    /// Counts the tokens of one model call.
    pub(super) fn count_tokens(&mut self, usage: &crate::provider::Usage) {
        self.input_tokens = self.input_tokens.saturating_add(usage.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(usage.output_tokens);
    }

    /// Brings `tree`'s ledger up to this run's spend (what it spent since the last time,
    /// tokens counted without a paid call included), releasing `hold`. Called with the spend
    /// locked, so a spend is never added twice nor missed.
    fn push_to_tree(&mut self, tree: &TreeAllowance, hold: Option<TreeHold>) {
        let now =
            RunUsage { input_tokens: self.input_tokens, output_tokens: self.output_tokens, cost_usd: self.cost_usd };
        let was = std::mem::replace(&mut self.in_tree, now);
        let delta = RunUsage {
            input_tokens: now.input_tokens.saturating_sub(was.input_tokens),
            output_tokens: now.output_tokens.saturating_sub(was.output_tokens),
            cost_usd: (now.cost_usd - was.cost_usd).max(0.0),
        };
        tree.settle(hold, delta);
    }
}

/// What a paid call holds while it is made: its reservation in the budget store, and its hold
/// on the run tree's limit when the run is part of a tree.
#[derive(Debug, Default)]
pub(super) struct Held {
    pub(super) store: Option<Reservation>,
    tree: Option<TreeHold>,
}

/// Why a paid call may not be made.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum BudgetStop {
    /// No headroom is left beyond the holds of calls in flight.
    Exhausted { headroom: f64 },
    /// The store failed and the runtime fails closed.
    StoreFailed(String),
    /// The agent's declarations refuse the call: its provider is not declared, or a budget
    /// cap per run is reached (see [`crate::declared`]).
    Declared(String),
}

impl std::fmt::Display for BudgetStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BudgetStop::Exhausted { headroom } => {
                write!(f, "no headroom is left ({headroom:.6} USD beyond the calls in flight)")
            }
            BudgetStop::StoreFailed(e) => {
                write!(f, "the budget store failed ({e}); no paid call is made (fail closed)")
            }
            BudgetStop::Declared(why) => write!(f, "{why}; no model call is made"),
        }
    }
}

/// The budget gate of one run, shared by its own calls and its auxiliary ones.
pub(super) struct Meter<'a, A> {
    pub(super) ctx: &'a RunCtx<A>,
    pub(super) spend: &'a Mutex<Spend>,
}

impl<A: Registry> Meter<'_, A> {
    /// Before a call of `provider`: refused when the agent's declarations or the run tree's
    /// limit refuse it; else what it holds: a reservation when the provider is paid and a
    /// store is set (`None` otherwise, or when the store failed and the runtime fails open),
    /// and a hold on the tree's limit when the run is part of a tree.
    pub(super) async fn reserve(&self, provider: &dyn Provider) -> Result<Held, BudgetStop> {
        let (spent, estimate) = {
            let s = lock(self.spend);
            let tokens = s.input_tokens.saturating_add(s.output_tokens);
            (agents_core::budget::RunSpend { tokens, usd: s.cost_usd }, s.last_cost)
        };
        if let Some(why) = crate::declared::before_model_call(&A::SPEC, provider, spent) {
            return Err(BudgetStop::Declared(why));
        }
        let tree = self.ctx.tree.get();
        let hold = match tree {
            Some(tree) => {
                let mut s = lock(self.spend);
                s.push_to_tree(tree, None);
                Some(tree.reserve(estimate).map_err(BudgetStop::Declared)?)
            }
            None => None,
        };
        let reserved = match reserve_in_store(&self.ctx.inner, &self.ctx.principal, provider, estimate).await {
            Ok(reserved) => reserved,
            Err(stop) => {
                if let Some(tree) = tree {
                    tree.settle(hold, RunUsage::default());
                }
                return Err(stop);
            }
        };
        if let Some(reason) = reserved.fail_open {
            let _ = self.ctx.audit(RecordFields::new(AuditStatus::Notice).reason(reason)).await;
        }
        Ok(Held { store: reserved.reservation, tree: hold })
    }

    /// After a call: its cost joins the run's total and the store (settling the reservation,
    /// or recorded when there was none). A cost that is negative or not finite is a provider
    /// fault: the reservation's estimate is charged instead, so recorded spend never goes
    /// down, and the fault is audited.
    pub(super) async fn settle(&self, held: Held, cost_usd: f64) {
        let Held { store: reservation, tree: hold } = held;
        let (cost, invalid) = charged(cost_usd, reservation.as_ref());
        if let Some(reason) = invalid {
            let _ = self.ctx.audit(RecordFields::new(AuditStatus::Notice).reason(reason)).await;
        }
        {
            let mut s = lock(self.spend);
            s.cost_usd += cost;
            if cost > 0.0 {
                s.last_cost = cost;
            }
            if let Some(tree) = self.ctx.tree.get() {
                s.push_to_tree(tree, hold);
            }
        }
        if let Some(budget) = settle_in_store(&self.ctx.inner, &self.ctx.principal, reservation, cost).await {
            super::threshold::report(self.ctx, &*budget, cost).await;
        }
    }
}

/// What a call that the provider said cost `cost_usd` is charged: that cost, or, when it is
/// negative or not finite (a provider fault), the reservation's estimate, so recorded spend
/// never goes down, with the `notice` that says so.
pub(super) fn charged(cost_usd: f64, reservation: Option<&Reservation>) -> (f64, Option<String>) {
    if cost_usd.is_finite() && cost_usd >= 0.0 {
        return (cost_usd, None);
    }
    let charged = reservation.map_or(0.0, |r| r.amount);
    tracing::error!(cost_usd, charged, "the provider reported an invalid cost");
    (charged, Some(format!("the provider reported a cost of {cost_usd} USD; {charged} USD was charged instead")))
}

/// What the budget store granted a paid call: its reservation (`None` for a free provider, no
/// store, or a store that failed while the runtime fails open, then with the `notice` to record).
pub(super) struct Reserved {
    pub(super) reservation: Option<Reservation>,
    /// Why the call is made uncounted (the store failed and the runtime fails open).
    pub(super) fail_open: Option<String>,
}

/// Holds `estimate` USD of `principal`'s budget for a call of `provider`, in the runtime's
/// budget store: what every paid call of the runtime reserves, a run's or a run tree's.
pub(super) async fn reserve_in_store(
    inner: &Inner,
    principal: &Principal,
    provider: &dyn Provider,
    estimate: f64,
) -> Result<Reserved, BudgetStop> {
    let none = Reserved { reservation: None, fail_open: None };
    let Some(budget) = inner.services.budget.as_ref().filter(|_| provider.is_paid()) else { return Ok(none) };
    match budget.reserve(&principal.org_id, &principal.user_id, estimate).await {
        Ok(Admission::Granted(r)) => Ok(Reserved { reservation: Some(r), fail_open: None }),
        Ok(Admission::Refused { headroom }) => Err(BudgetStop::Exhausted { headroom }),
        Err(e) => match inner.settings.budget_fallback {
            BudgetFallback::FailClosed => {
                tracing::warn!(error = %e, "budget store unavailable; the paid call is not made");
                Err(BudgetStop::StoreFailed(e.to_string()))
            }
            BudgetFallback::FailOpen => {
                tracing::warn!(error = %e, "budget store unavailable; the call is made uncounted (fail open)");
                let reason = format!("budget store unavailable ({e}); the paid call is made uncounted (fail open)");
                Ok(Reserved { reservation: None, fail_open: Some(reason) })
            }
        },
    }
}

/// Settles a paid call's `reservation` with its `cost` in the budget store (or records the cost
/// when nothing was reserved). The store, when the spend was recorded there.
pub(super) async fn settle_in_store(
    inner: &Inner,
    principal: &Principal,
    reservation: Option<Reservation>,
    cost: f64,
) -> Option<std::sync::Arc<dyn crate::budget::BudgetStore>> {
    let budget = inner.services.budget.clone()?;
    let stored = match reservation {
        Some(r) => budget.settle(r, cost).await,
        None if cost > 0.0 => budget.record(&principal.org_id, &principal.user_id, cost).await,
        None => Ok(()),
    };
    match stored {
        Ok(()) => Some(budget),
        Err(e) => {
            tracing::error!(error = %e, "spend could not be recorded");
            None
        }
    }
}

impl<A: Registry> MeteredCalls for Meter<'_, A> {
    fn chat<'a>(
        &'a self,
        provider: &'a dyn Provider,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let reservation = self.reserve(provider).await.map_err(|stop| {
                ProviderError::Other(format!("the budget gate refused an auxiliary model call: {stop}"))
            })?;
            let ignore = |_: &str| {};
            let secs = self.ctx.limits.provider_timeout_secs;
            let call = crate::provider::chat_contained(provider, request, &ignore);
            let answer = match tokio::time::timeout(Duration::from_secs(secs), call).await {
                Ok(answer) => answer,
                Err(_) => Err(ProviderError::Timeout { secs }),
            };
            if let Ok(r) = &answer {
                lock(self.spend).count_tokens(&r.usage);
            }
            let cost = answer.as_ref().map_or(0.0, |r| r.usage.cost_usd);
            self.settle(reservation, cost).await;
            answer
        })
    }
}
