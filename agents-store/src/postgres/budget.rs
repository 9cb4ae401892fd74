//! The budget in the PostgreSQL database, shared by every node.

use super::connection::{PostgresStore, abandon, in_own_task, with_sources};
use crate::budget_amount;
use agents_runtime::BoxFuture;
use agents_runtime::budget::{Admission, BudgetError, BudgetStore, BudgetUsage, Reservation};

fn budget_error(e: impl std::error::Error) -> BudgetError {
    BudgetError(format!("PostgreSQL: {}", with_sources(&e)))
}

/// The accounts a call of `user_id` in `org_id` is counted against, in the order every
/// transaction writes them (the user's, then the organisation's `''`), so two transactions
/// never wait on each other's rows in opposite orders.
fn keys<'a>(org_id: &'a str, user_id: &'a str) -> Result<[(&'a str, &'a str); 2], BudgetError> {
    if org_id.is_empty() || user_id.is_empty() {
        return Err(BudgetError("a budget account needs a non-empty organisation and user".to_owned()));
    }
    Ok([(org_id, user_id), (org_id, "")])
}

const HEADROOM: &str = "SELECT c.cap_usd - COALESCE(a.spend_usd, 0) - COALESCE(a.held_usd, 0) FROM agents_budget_caps c \
                        LEFT JOIN agents_budget_accounts a ON a.org_id = c.org_id AND a.user_id = c.user_id \
                        WHERE c.org_id = $1 AND c.user_id IN ($2, '')";

impl PostgresStore {
    /// Sets the monthly cap of organisation `org_id` (`user_id` `None`) or of one of its
    /// users, for every node. A negative or non-finite cap is refused and changes nothing.
    pub async fn set_budget_cap(&self, org_id: &str, user_id: Option<&str>, cap_usd: f64) -> Result<(), BudgetError> {
        keys(org_id, user_id.unwrap_or("-"))?;
        if !cap_usd.is_finite() || cap_usd < 0.0 {
            return Err(BudgetError(format!("a cap of {cap_usd} USD refused: it must be a finite number, 0 or more")));
        }
        let client = self.client().await.map_err(budget_error)?;
        client
            .execute(
                "INSERT INTO agents_budget_caps (org_id, user_id, cap_usd) VALUES ($1, $2, $3) \
                 ON CONFLICT (org_id, user_id) DO UPDATE SET cap_usd = EXCLUDED.cap_usd",
                &[&org_id, &user_id.unwrap_or(""), &cap_usd],
            )
            .await
            .map(drop)
            .map_err(budget_error)
    }

    /// The spend and the held headroom of a user's account (`user_id` `None`: the
    /// organisation's), in USD.
    pub async fn budget_account(&self, org_id: &str, user_id: Option<&str>) -> Result<(f64, f64), BudgetError> {
        let client = self.client().await.map_err(budget_error)?;
        let row = client
            .query_opt(
                "SELECT spend_usd, held_usd FROM agents_budget_accounts WHERE org_id = $1 AND user_id = $2",
                &[&org_id, &user_id.unwrap_or("")],
            )
            .await
            .map_err(budget_error)?;
        Ok(row.map_or((0.0, 0.0), |r| (r.get(0), r.get(1))))
    }

    async fn headroom(client: &deadpool_postgres::Object, org_id: &str, user_id: &str) -> Result<f64, BudgetError> {
        let headroom = client.prepare_cached(HEADROOM).await.map_err(budget_error)?;
        let rows = client.query(&headroom, &[&org_id, &user_id]).await.map_err(budget_error)?;
        Ok(rows.iter().map(|r| r.get::<_, f64>(0)).fold(f64::INFINITY, f64::min))
    }
}

/// The budget in the shared database. A reservation is one transaction of two conditional
/// `UPDATE`s (the user's account, then the organisation's), each admitting only while its cap
/// minus spend minus holds is above 0: PostgreSQL re-evaluates that condition on the newest
/// version of the row once a concurrent writer of it commits, so the guarantee of
/// [`agents_runtime::budget`] holds across every node, with no lock in any process.
impl BudgetStore for PostgresStore {
    fn usage<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<BudgetUsage>, BudgetError>> {
        Box::pin(async move {
            let client = self.client().await.map_err(budget_error)?;
            let usage = client.prepare_cached(crate::USAGE_SQL).await.map_err(budget_error)?;
            let rows = client.query(&usage, &[&org_id, &user_id]).await.map_err(budget_error)?;
            Ok(Some(crate::usage_of(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))))))
        })
    }

    fn remaining<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, Result<f64, BudgetError>> {
        Box::pin(async move {
            let client = self.client().await.map_err(budget_error)?;
            Self::headroom(&client, org_id, user_id).await
        })
    }

    fn record<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        cost_usd: f64,
    ) -> BoxFuture<'a, Result<(), BudgetError>> {
        let (store, org_id, user_id) = (self.clone(), org_id.to_owned(), user_id.to_owned());
        in_own_task(
            async move {
                let keys = keys(&org_id, &user_id)?;
                let cost = budget_amount("a cost", cost_usd)?;
                let mut client = store.client().await.map_err(budget_error)?;
                let tx = client.transaction().await.map_err(budget_error)?;
                let add = tx
                    .prepare_cached(
                        "INSERT INTO agents_budget_accounts (org_id, user_id, spend_usd) VALUES ($1, $2, $3) \
                         ON CONFLICT (org_id, user_id) DO UPDATE SET spend_usd = agents_budget_accounts.spend_usd + EXCLUDED.spend_usd",
                    )
                    .await
                    .map_err(budget_error)?;
                for (org, user) in keys {
                    tx.execute(&add, &[&org, &user, &cost]).await.map_err(budget_error)?;
                }
                tx.commit().await.map_err(budget_error)
            },
            budget_error,
        )
    }

    fn reserve<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        estimate_usd: f64,
    ) -> BoxFuture<'a, Result<Admission, BudgetError>> {
        let (store, org_id, user_id) = (self.clone(), org_id.to_owned(), user_id.to_owned());
        in_own_task(
            async move {
                let (org_id, user_id) = (org_id.as_str(), user_id.as_str());
                let keys = keys(org_id, user_id)?;
                let estimate = budget_amount("an estimate", estimate_usd)?;
                let client = store.client().await.map_err(budget_error)?;
                let ensure = client
                    .prepare_cached(
                        "INSERT INTO agents_budget_accounts (org_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    )
                    .await
                    .map_err(budget_error)?;
                let hold = client
                    .prepare_cached(
                        "UPDATE agents_budget_accounts SET held_usd = held_usd + $3, holds = holds + 1 \
                     WHERE org_id = $1 AND user_id = $2 AND COALESCE((SELECT cap_usd FROM agents_budget_caps \
                     WHERE org_id = $1 AND user_id = $2) - spend_usd - held_usd > 0, true)",
                    )
                    .await
                    .map_err(budget_error)?;
                let outcome: Result<Option<f64>, BudgetError> = async {
                    client.batch_execute("BEGIN").await.map_err(budget_error)?;
                    for (org, user) in keys {
                        client.execute(&ensure, &[&org, &user]).await.map_err(budget_error)?;
                        if client.execute(&hold, &[&org, &user, &estimate]).await.map_err(budget_error)? == 0 {
                            return Ok(Some(Self::headroom(&client, org_id, user_id).await?));
                        }
                    }
                    client.batch_execute("COMMIT").await.map_err(budget_error)?;
                    Ok(None)
                }
                .await;
                match outcome {
                    Ok(None) => Ok(Admission::Granted(Reservation {
                        org_id: org_id.to_owned(),
                        user_id: user_id.to_owned(),
                        amount: estimate,
                    })),
                    Ok(Some(headroom)) => {
                        abandon(&client).await;
                        Ok(Admission::Refused { headroom })
                    }
                    Err(e) => {
                        abandon(&client).await;
                        Err(e)
                    }
                }
            },
            budget_error,
        )
    }

    fn settle(&self, reservation: Reservation, cost_usd: f64) -> BoxFuture<'_, Result<(), BudgetError>> {
        let store = self.clone();
        in_own_task(
            async move {
                let keys = keys(&reservation.org_id, &reservation.user_id)?;
                let cost = budget_amount("a cost", cost_usd)?;
                let mut client = store.client().await.map_err(budget_error)?;
                let tx = client.transaction().await.map_err(budget_error)?;
                // `held_usd` is reset to exactly 0 when no hold is left, so rounding does not
                // accumulate.
                let spend = tx
                    .prepare_cached(
                        "UPDATE agents_budget_accounts SET spend_usd = spend_usd + $4, \
                         held_usd = CASE WHEN holds <= 1 THEN 0 ELSE GREATEST(held_usd - $3, 0) END, \
                         holds = GREATEST(holds - 1, 0) WHERE org_id = $1 AND user_id = $2",
                    )
                    .await
                    .map_err(budget_error)?;
                for (org, user) in keys {
                    tx.execute(&spend, &[&org, &user, &reservation.amount, &cost]).await.map_err(budget_error)?;
                }
                tx.commit().await.map_err(budget_error)
            },
            budget_error,
        )
    }
}
