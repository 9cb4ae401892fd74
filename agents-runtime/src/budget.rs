//! Budgets: a gate before every paid model call of a run — the agent's and any auxiliary
//! call such as a model-backed confirmation classifier — and a record of what each cost.
//! Headroom is the smaller of the organisation's and the user's monthly cap minus
//! month-to-date spend minus the headroom held by calls in flight (infinite when neither cap
//! is set).
//!
//! # Reserve, call, settle
//!
//! Before a paid call the run asks the store to [`reserve`](BudgetStore::reserve) headroom;
//! the store admits the call only if headroom is left after the reservations of the calls
//! already in flight, and holds the call's estimate (the run's previous call's cost; 0 for
//! its first call). After the call the run [`settle`](BudgetStore::settle)s: the estimate is
//! released and the call's actual cost is added to the spend. Admission and holding happen
//! in one step of the store (one lock for [`InMemoryBudget`]; `agents_store`'s SQLite and
//! PostgreSQL stores, shared by every node, do it with one conditional `UPDATE` per cap in one
//! transaction), so two runs cannot both take the last headroom, on one node or several.
//!
//! # The exact guarantee
//!
//! Held against runs of one principal (and of one organisation) that share a store, however
//! many run at once: **a paid call starts only while spend plus the holds of the calls in
//! flight is below the cap, and each run has at most one paid call in flight.** So with `k`
//! runs at once the month's spend exceeds the cap by less than the cost of the calls in
//! flight when the last call was admitted — at most one call per concurrent run, `k` calls
//! in all — minus what the others of those calls held.
//!
//! That overshoot is possible, and cannot be removed by the gate, because a call's cost is
//! known only once it has been made: a call admitted with a little headroom left may cost
//! more than that little, and the calls of other runs admitted before it was settled may too.
//! The holds make the overshoot smaller once runs have a cost history (a run whose previous
//! call cost 0.10 USD does not start while less than that is left beyond the others' holds);
//! they cannot make it smaller for a run's first call, whose cost nothing predicts.
//!
//! Recorded spend never decreases: [`record`](BudgetStore::record) and
//! [`settle`](BudgetStore::settle) refuse a negative or non-finite cost with an error and
//! change nothing.
//!
//! # Costs
//!
//! The spend recorded for a call is its [`Usage::cost_usd`](crate::provider::Usage::cost_usd).
//! When the server's token usage could not be read (missing, of the wrong type, negative),
//! the HTTP providers never report the call as free: they warn and price a documented
//! overestimate instead ([`Usage::estimated`](crate::provider::Usage::estimated); see
//! [`provider::pricing`](crate::provider::pricing)), so such a call still counts against the
//! cap before the next one. A model without a price costs 0 and is flagged by its provider.
//!
//! # A store that cannot answer
//!
//! When the store fails, the run stops before the paid call by default
//! ([`BudgetFallback::FailClosed`]); [`BudgetFallback::FailOpen`] lets the call go ahead
//! uncounted. Either way the failure is audited.

use crate::BoxFuture;
use crate::provider::{ChatRequest, ChatResponse, Provider, ProviderError};
use std::collections::HashMap;
use std::sync::Mutex;

/// Why the budget store could not answer, or refused a value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("budget store error: {0}")]
pub struct BudgetError(pub String);

/// What to do when the budget store cannot answer before a paid call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BudgetFallback {
    /// Stop the run before the call, as when the budget is used up; audited. The default: a
    /// budget that cannot be read does not bind, so the call is not made.
    #[default]
    FailClosed,
    /// Make the call uncounted by the gate (its cost is still recorded if the store
    /// recovers); audited.
    FailOpen,
}

/// Headroom held for one paid call, from [`BudgetStore::reserve`] until
/// [`BudgetStore::settle`].
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a reservation holds headroom until it is settled"]
pub struct Reservation {
    /// The organisation.
    pub org_id: String,
    /// The user.
    pub user_id: String,
    /// The headroom held, in USD.
    pub amount: f64,
}

/// The store's answer to a reservation.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// The call may be made; settle the reservation after it.
    Granted(Reservation),
    /// No headroom is left beyond the holds of calls in flight; the call must not be made.
    Refused {
        /// The headroom there was (0 or less), net of the holds, in USD.
        headroom: f64,
    },
}

/// Where caps, spend and the holds of calls in flight live. See the [module docs](self) for
/// the guarantee the runtime builds from these operations; an implementation must admit and
/// hold in one atomic step.
pub trait BudgetStore: Send + Sync {
    /// Remaining headroom in USD for this user in this organisation this month, net of the
    /// holds of calls in flight.
    fn remaining<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, Result<f64, BudgetError>>;
    /// Records spend that was not reserved. A negative or non-finite cost is refused and
    /// changes nothing.
    fn record<'a>(&'a self, org_id: &'a str, user_id: &'a str, cost_usd: f64)
    -> BoxFuture<'a, Result<(), BudgetError>>;
    /// Admits a paid call if headroom is left beyond the holds of calls in flight, and holds
    /// `estimate_usd` for it; atomically. A negative or non-finite estimate is refused.
    fn reserve<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        estimate_usd: f64,
    ) -> BoxFuture<'a, Result<Admission, BudgetError>>;
    /// Releases a reservation and records the call's actual cost. A negative or non-finite
    /// cost is refused and changes nothing (the hold stays until settled with a valid cost).
    fn settle(&self, reservation: Reservation, cost_usd: f64) -> BoxFuture<'_, Result<(), BudgetError>>;

    /// Month-to-date spend against each cap set for this user and their organisation, read
    /// after a paid call is settled to tell whether it crossed one of the
    /// [thresholds](crate::RuntimeBuilder::budget_thresholds). The default answers `None`: a
    /// store that does not say emits no threshold events (the caps still bind).
    fn usage<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<BudgetUsage>, BudgetError>> {
        let _ = (org_id, user_id);
        Box::pin(async { Ok(None) })
    }
}

/// Month-to-date spend against the caps of one user and their organisation
/// ([`BudgetStore::usage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetUsage {
    /// The user's cap and spend, when the user has a cap.
    pub user: Option<CapUsage>,
    /// The organisation's cap and spend, when it has a cap.
    pub organisation: Option<CapUsage>,
}

/// Spend against one cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapUsage {
    /// Month-to-date spend, in USD.
    pub spent_usd: f64,
    /// The cap, in USD.
    pub cap_usd: f64,
}

/// The fractions of a cap whose crossing [`RuntimeBuilder::budget_thresholds`](crate::RuntimeBuilder::budget_thresholds)
/// reports by default: half, 80 % and the whole cap.
pub const DEFAULT_BUDGET_THRESHOLDS: [f64; 3] = [0.5, 0.8, 1.0];

/// A budget threshold that is not a fraction of a cap.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("budget threshold {0} refused: give fractions of a cap greater than 0 and at most 1 (0.8 is 80 %)")]
pub struct InvalidThreshold(pub f64);

/// The fractions of `fractions` (each in (0, 1]) that spend moving from `before` to `after`
/// crosses on a cap of `cap` (positive): `before < fraction × cap <= after`.
pub(crate) fn crossed(fractions: &[f64], before: f64, after: f64, cap: f64) -> impl Iterator<Item = f64> + '_ {
    let real = cap.is_finite() && cap > 0.0;
    fractions.iter().copied().filter(move |f| real && before < f * cap && f * cap <= after)
}

/// How an auxiliary model call — one a component such as a
/// [`ModelClassifier`](crate::classifier::ModelClassifier) makes besides the agent's own — is
/// made. Inside a run the runtime hands the component its gate: the call is reserved, made
/// within the provider timeout and settled like the agent's calls, and its cost is part of
/// the run's. A call the budget refuses is not made and fails with
/// [`ProviderError::Other`] saying so.
pub trait MeteredCalls: Send + Sync {
    /// Makes one call of `provider`, metered.
    fn chat<'a>(
        &'a self,
        provider: &'a dyn Provider,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;
}

/// Calls made directly and counted nowhere: for components used outside a run (a test, a
/// tool of one's own). The runtime never uses it for a run's calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unmetered;

impl MeteredCalls for Unmetered {
    fn chat<'a>(
        &'a self,
        provider: &'a dyn Provider,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let ignore = |_: &str| {};
            provider.chat(request, &ignore).await
        })
    }
}

/// Checks an amount of money given to a store.
fn amount(what: &str, usd: f64) -> Result<f64, BudgetError> {
    if usd.is_finite() && usd >= 0.0 {
        Ok(usd)
    } else {
        Err(BudgetError(format!("{what} of {usd} USD refused: it must be a finite number, 0 or more")))
    }
}

/// An in-memory budget store (one process).
#[derive(Debug, Default)]
pub struct InMemoryBudget {
    inner: Mutex<BudgetState>,
}

/// The spend and the holds of one organisation or one user.
#[derive(Debug, Default, Clone, Copy)]
struct Account {
    spend: f64,
    held: f64,
    /// Reservations not yet settled; `held` is reset to exactly 0 when none is left, so
    /// rounding does not accumulate.
    holds: usize,
}

impl Account {
    fn hold(&mut self, usd: f64) {
        self.held += usd;
        self.holds += 1;
    }

    fn release(&mut self, usd: f64) {
        self.holds = self.holds.saturating_sub(1);
        self.held = if self.holds == 0 { 0.0 } else { (self.held - usd).max(0.0) };
    }
}

#[derive(Debug, Default)]
struct BudgetState {
    org_caps: HashMap<String, f64>,
    user_caps: HashMap<(String, String), f64>,
    orgs: HashMap<String, Account>,
    users: HashMap<(String, String), Account>,
}

impl BudgetState {
    fn headroom(&self, org_id: &str, user_id: &str) -> f64 {
        let key = (org_id.to_owned(), user_id.to_owned());
        let net = |cap: f64, a: Option<&Account>| {
            let a = a.copied().unwrap_or_default();
            cap - a.spend - a.held
        };
        let org = self.org_caps.get(org_id).map(|c| net(*c, self.orgs.get(org_id)));
        let user = self.user_caps.get(&key).map(|c| net(*c, self.users.get(&key)));
        match (org, user) {
            // A NaN cap leaves no headroom (`f64::min` would pick the other value).
            (Some(a), Some(b)) if a.is_nan() || b.is_nan() => f64::NAN,
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => f64::INFINITY,
        }
    }

    fn accounts(&mut self, org_id: &str, user_id: &str) -> (&mut Account, &mut Account) {
        let org = self.orgs.entry(org_id.to_owned()).or_default();
        let user = self.users.entry((org_id.to_owned(), user_id.to_owned())).or_default();
        (org, user)
    }
}

impl InMemoryBudget {
    /// No caps.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets an organisation's monthly cap (a cap that is not a number admits no call).
    pub fn with_org_cap(self, org_id: &str, usd: f64) -> Self {
        self.lock().org_caps.insert(org_id.to_owned(), usd);
        self
    }
    /// Sets a user's monthly cap (a cap that is not a number admits no call).
    pub fn with_user_cap(self, org_id: &str, user_id: &str, usd: f64) -> Self {
        self.lock().user_caps.insert((org_id.to_owned(), user_id.to_owned()), usd);
        self
    }
    /// Month-to-date spend of a user.
    pub fn user_spend(&self, org_id: &str, user_id: &str) -> f64 {
        self.lock().users.get(&(org_id.to_owned(), user_id.to_owned())).map_or(0.0, |a| a.spend)
    }
    /// Headroom a user's calls in flight hold, in USD.
    pub fn user_held(&self, org_id: &str, user_id: &str) -> f64 {
        self.lock().users.get(&(org_id.to_owned(), user_id.to_owned())).map_or(0.0, |a| a.held)
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl BudgetStore for InMemoryBudget {
    fn usage<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<BudgetUsage>, BudgetError>> {
        let s = self.lock();
        let key = (org_id.to_owned(), user_id.to_owned());
        let of = |cap: Option<&f64>, a: Option<&Account>| {
            cap.map(|c| CapUsage { spent_usd: a.map_or(0.0, |a| a.spend), cap_usd: *c })
        };
        let usage = BudgetUsage {
            user: of(s.user_caps.get(&key), s.users.get(&key)),
            organisation: of(s.org_caps.get(org_id), s.orgs.get(org_id)),
        };
        Box::pin(async move { Ok(Some(usage)) })
    }

    fn remaining<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, Result<f64, BudgetError>> {
        let r = self.lock().headroom(org_id, user_id);
        Box::pin(async move { Ok(r) })
    }

    fn record<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        cost_usd: f64,
    ) -> BoxFuture<'a, Result<(), BudgetError>> {
        let r = amount("a cost", cost_usd).map(|cost| {
            let mut s = self.lock();
            let (org, user) = s.accounts(org_id, user_id);
            org.spend += cost;
            user.spend += cost;
        });
        Box::pin(async move { r })
    }

    fn reserve<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        estimate_usd: f64,
    ) -> BoxFuture<'a, Result<Admission, BudgetError>> {
        let r = amount("an estimate", estimate_usd).map(|estimate| {
            let mut s = self.lock();
            let headroom = s.headroom(org_id, user_id);
            // A NaN headroom (a NaN cap) is refused too.
            if headroom.is_nan() || headroom <= 0.0 {
                return Admission::Refused { headroom };
            }
            let (org, user) = s.accounts(org_id, user_id);
            org.hold(estimate);
            user.hold(estimate);
            Admission::Granted(Reservation { org_id: org_id.to_owned(), user_id: user_id.to_owned(), amount: estimate })
        });
        Box::pin(async move { r })
    }

    fn settle(&self, reservation: Reservation, cost_usd: f64) -> BoxFuture<'_, Result<(), BudgetError>> {
        let r = amount("a cost", cost_usd).map(|cost| {
            let mut s = self.lock();
            let (org, user) = s.accounts(&reservation.org_id, &reservation.user_id);
            for a in [org, user] {
                a.release(reservation.amount);
                a.spend += cost;
            }
        });
        Box::pin(async move { r })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::sync::Arc;

    #[test]
    fn a_threshold_is_crossed_once_by_the_spend_that_reaches_it() {
        let f = DEFAULT_BUDGET_THRESHOLDS;
        let at = |before, after, cap| crossed(&f, before, after, cap).collect::<Vec<_>>();
        assert_eq!(at(0.0, 4.0, 10.0), Vec::<f64>::new());
        assert_eq!(at(4.0, 5.0, 10.0), [0.5], "reaching it exactly crosses it");
        assert_eq!(at(5.0, 6.0, 10.0), Vec::<f64>::new(), "already beyond: not again");
        assert_eq!(at(4.0, 12.0, 10.0), [0.5, 0.8, 1.0], "one call may cross several");
        assert_eq!(at(0.0, 1.0, 0.0), Vec::<f64>::new(), "a zero cap has no fractions");
        assert_eq!(at(0.0, 1.0, f64::NAN), Vec::<f64>::new());
    }

    fn granted(a: Admission) -> Reservation {
        match a {
            Admission::Granted(r) => r,
            Admission::Refused { headroom } => panic!("refused with {headroom} USD headroom"),
        }
    }

    #[tokio::test]
    async fn calls_in_flight_hold_headroom_until_settled() {
        let b = InMemoryBudget::new().with_user_cap("o", "u", 1.0);
        // Run A's previous call cost 0.9: it holds that much for its next one.
        let a = granted(b.reserve("o", "u", 0.9).await.unwrap());
        assert!((b.remaining("o", "u").await.unwrap() - 0.1).abs() < 1e-12);
        let other = granted(b.reserve("o", "u", 0.2).await.unwrap());
        // 0.9 + 0.2 held of 1.0: no headroom is left for run C while both are in flight.
        assert!(matches!(b.reserve("o", "u", 0.0).await.unwrap(), Admission::Refused { headroom } if headroom < 0.0));
        b.settle(a, 0.5).await.unwrap();
        b.settle(other, 0.1).await.unwrap();
        assert_eq!(b.user_held("o", "u"), 0.0);
        assert!((b.user_spend("o", "u") - 0.6).abs() < 1e-12);
        let c = granted(b.reserve("o", "u", 0.0).await.unwrap());
        b.settle(c, 0.5).await.unwrap();
        assert!(matches!(b.reserve("o", "u", 0.0).await.unwrap(), Admission::Refused { .. }), "spend reached the cap");
    }

    #[tokio::test]
    async fn the_organisation_cap_binds_every_user_in_it() {
        let b = InMemoryBudget::new().with_org_cap("o", 1.0);
        let r = granted(b.reserve("o", "u1", 0.0).await.unwrap());
        b.settle(r, 1.0).await.unwrap();
        assert!(matches!(b.reserve("o", "u2", 0.0).await.unwrap(), Admission::Refused { .. }));
        assert!(matches!(b.reserve("other", "u2", 0.0).await.unwrap(), Admission::Granted(_)));
    }

    #[tokio::test]
    async fn spend_never_decreases_and_bad_amounts_change_nothing() {
        let b = InMemoryBudget::new().with_user_cap("o", "u", 10.0);
        b.record("o", "u", 2.0).await.unwrap();
        let r = granted(b.reserve("o", "u", 1.0).await.unwrap());
        for bad in [-1.0, -0.0001, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let e = b.record("o", "u", bad).await.unwrap_err();
            assert!(e.0.contains("finite number, 0 or more"), "{e}");
            assert!(b.settle(r.clone(), bad).await.is_err());
            assert!(b.reserve("o", "u", bad).await.is_err());
            assert_eq!(b.user_spend("o", "u"), 2.0);
            assert_eq!(b.user_held("o", "u"), 1.0);
        }
        b.settle(r, 0.0).await.unwrap();
        assert_eq!((b.user_spend("o", "u"), b.user_held("o", "u")), (2.0, 0.0));
    }

    #[tokio::test]
    async fn a_cap_that_is_not_a_number_admits_nothing() {
        let b = InMemoryBudget::new().with_org_cap("o", 5.0).with_user_cap("o", "u", f64::NAN);
        assert!(matches!(b.reserve("o", "u", 0.0).await.unwrap(), Admission::Refused { .. }));
    }

    /// `RUNS` tasks of one principal on a multi-threaded runtime each make paid calls of a
    /// random cost, reserving their previous call's cost, until refused. The spend ends
    /// within the cap plus one call per task, and every hold is released.
    #[test]
    fn concurrent_runs_exceed_the_cap_by_at_most_one_call_each() {
        const RUNS: usize = 8;
        const CAP: f64 = 3.0;
        const MAX_CALL: f64 = 0.25;
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(4).build().unwrap();
        for seed in 0..20u64 {
            let b = Arc::new(InMemoryBudget::new().with_user_cap("o", "u", CAP));
            let calls: usize = rt.block_on(async {
                let tasks: Vec<_> = (0..RUNS as u64)
                    .map(|i| {
                        let b = b.clone();
                        tokio::spawn(async move {
                            let mut rng = rand::rngs::StdRng::seed_from_u64(seed * 100 + i);
                            let (mut last, mut calls) = (0.0, 0);
                            // Bounded so that a gate that admits everything ends the test.
                            while calls < 1000 {
                                let Admission::Granted(r) = b.reserve("o", "u", last).await.unwrap() else { break };
                                for _ in 0..rng.gen_range(0..4) {
                                    tokio::task::yield_now().await;
                                }
                                last = rng.gen_range(0.0..MAX_CALL);
                                b.settle(r, last).await.unwrap();
                                calls += 1;
                            }
                            calls
                        })
                    })
                    .collect();
                let mut n = 0;
                for t in tasks {
                    n += t.await.unwrap();
                }
                n
            });
            let spend = b.user_spend("o", "u");
            assert!(spend < CAP + RUNS as f64 * MAX_CALL, "seed {seed}: spent {spend} of {CAP} in {calls} calls");
            assert!(calls > RUNS, "seed {seed}: the runs made calls ({calls})");
            assert_eq!(b.user_held("o", "u"), 0.0, "seed {seed}");
        }
    }
}
