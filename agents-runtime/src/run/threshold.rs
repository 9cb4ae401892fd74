//! Budget thresholds: after a paid call of a run is settled, the month's spend against the
//! user's and the organisation's caps is read ([`BudgetStore::usage`]); each configured
//! fraction of a cap that this call's cost carried the spend across is reported once, as an
//! [`Event::BudgetThreshold`] and a `notice` record (evidence that the cap was being reached,
//! and by whose run).

use super::context::RunCtx;
use super::record::RecordFields;
use crate::audit::{AuditResult, AuditStatus};
use crate::budget::{BudgetStore, crossed};
use crate::events::{BudgetScope, Event};
use crate::tool::Registry;
use serde_json::json;

/// Reports the thresholds the call that cost `cost` USD crossed, for the run `ctx`.
pub(super) async fn report<A: Registry>(ctx: &RunCtx<A>, budget: &dyn BudgetStore, cost: f64) {
    let fractions = &ctx.inner.settings.budget_thresholds;
    if fractions.is_empty() || cost <= 0.0 {
        return;
    }
    let p = &ctx.principal;
    let usage = match budget.usage(&p.org_id, &p.user_id).await {
        Ok(Some(usage)) => usage,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, "the budget's usage could not be read; no threshold is reported for this call");
            return;
        }
    };
    for (scope, cap) in [(BudgetScope::User, usage.user), (BudgetScope::Organisation, usage.organisation)] {
        let Some(cap) = cap else { continue };
        for fraction in crossed(fractions, cap.spent_usd - cost, cap.spent_usd, cap.cap_usd) {
            let (spent_usd, cap_usd) = (cap.spent_usd, cap.cap_usd);
            ctx.emit(|| Event::BudgetThreshold {
                run_id: ctx.ids.run_id.to_string(),
                scope,
                fraction,
                spent_usd,
                cap_usd,
            });
            let reason = format!(
                "budget threshold: the {} cap is {:.0} % spent ({spent_usd:.6} of {cap_usd:.6} USD)",
                scope.as_str(),
                fraction * 100.0
            );
            let facts = json!({"budget_threshold": {"scope": scope.as_str(), "fraction": fraction, "spent_usd": spent_usd, "cap_usd": cap_usd}});
            let mut notice = RecordFields::new(AuditStatus::Notice).reason(reason);
            notice.result = Some(AuditResult::Value(facts));
            let _ = ctx.audit(notice).await;
        }
    }
}
