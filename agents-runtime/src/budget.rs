//! Budgets: a gate before the first paid call of a run and before every further one.
//! Headroom is the smaller of the organisation's and the user's monthly cap minus
//! month-to-date spend (infinite when neither is set).
//!
//! The spend recorded for a call is its [`Usage::cost_usd`](crate::provider::Usage::cost_usd).
//! When the server's token usage could not be read (missing, of the wrong type, negative),
//! the HTTP providers never report the call as free: they warn and price a documented
//! overestimate instead ([`Usage::estimated`](crate::provider::Usage::estimated); see
//! [`provider::pricing`](crate::provider::pricing)), so such a call still counts against the
//! cap before the next one. A model without a price costs 0 and is flagged by its provider.

use crate::BoxFuture;
use std::collections::HashMap;
use std::sync::Mutex;

/// Why the budget store could not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("budget store error: {0}")]
pub struct BudgetError(pub String);

/// Where caps and spend live.
pub trait BudgetStore: Send + Sync {
    /// Remaining headroom in USD for this user in this organisation this month.
    fn remaining<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, Result<f64, BudgetError>>;
    /// Records spend (called after every paid provider call, also when the run is stopped).
    fn record<'a>(&'a self, org_id: &'a str, user_id: &'a str, cost_usd: f64)
    -> BoxFuture<'a, Result<(), BudgetError>>;
}

/// An in-memory budget store.
#[derive(Debug, Default)]
pub struct InMemoryBudget {
    inner: Mutex<BudgetState>,
}

#[derive(Debug, Default)]
struct BudgetState {
    org_caps: HashMap<String, f64>,
    user_caps: HashMap<(String, String), f64>,
    org_spend: HashMap<String, f64>,
    user_spend: HashMap<(String, String), f64>,
}

impl InMemoryBudget {
    /// No caps.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets an organisation's monthly cap.
    pub fn with_org_cap(self, org_id: &str, usd: f64) -> Self {
        self.lock().org_caps.insert(org_id.to_owned(), usd);
        self
    }
    /// Sets a user's monthly cap.
    pub fn with_user_cap(self, org_id: &str, user_id: &str, usd: f64) -> Self {
        self.lock().user_caps.insert((org_id.to_owned(), user_id.to_owned()), usd);
        self
    }
    /// Month-to-date spend of a user.
    pub fn user_spend(&self, org_id: &str, user_id: &str) -> f64 {
        self.lock().user_spend.get(&(org_id.to_owned(), user_id.to_owned())).copied().unwrap_or(0.0)
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl BudgetStore for InMemoryBudget {
    fn remaining<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, Result<f64, BudgetError>> {
        let s = self.lock();
        let key = (org_id.to_owned(), user_id.to_owned());
        let org = s.org_caps.get(org_id).map(|c| c - s.org_spend.get(org_id).copied().unwrap_or(0.0));
        let user = s.user_caps.get(&key).map(|c| c - s.user_spend.get(&key).copied().unwrap_or(0.0));
        let r = match (org, user) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => f64::INFINITY,
        };
        Box::pin(async move { Ok(r) })
    }

    fn record<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        cost_usd: f64,
    ) -> BoxFuture<'a, Result<(), BudgetError>> {
        let mut s = self.lock();
        *s.org_spend.entry(org_id.to_owned()).or_default() += cost_usd;
        *s.user_spend.entry((org_id.to_owned(), user_id.to_owned())).or_default() += cost_usd;
        Box::pin(async { Ok(()) })
    }
}
