//! The budget in the state file, shared by every process that opens it.

use super::connection::{SqliteStore, execute, query_row, sql_error};
use crate::budget_amount;
use agents_runtime::BoxFuture;
use agents_runtime::budget::{Admission, BudgetError, BudgetStore, BudgetUsage, Reservation};
use rusqlite::{Connection, OptionalExtension, params};

/// The budget accounts of `org_id`'s cap (user `''`) and `user_id`'s, in that order of rows
/// written: a user's row first, then the organisation's, on every path.
fn budget_keys<'a>(org_id: &'a str, user_id: &'a str) -> Result<[(&'a str, &'a str); 2], BudgetError> {
    if org_id.is_empty() || user_id.is_empty() {
        return Err(BudgetError("a budget account needs a non-empty organisation and user".to_owned()));
    }
    Ok([(org_id, user_id), (org_id, "")])
}

fn budget_error(e: impl std::fmt::Display) -> BudgetError {
    BudgetError(e.to_string())
}

/// The headroom of `org_id`/`user_id`: the smaller of the caps set, each minus its account's
/// spend and holds; infinite when neither cap is set.
fn sqlite_headroom(conn: &Connection, org_id: &str, user_id: &str) -> rusqlite::Result<f64> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.cap_usd - COALESCE(a.spend_usd, 0) - COALESCE(a.held_usd, 0) FROM agents_budget_caps c \
         LEFT JOIN agents_budget_accounts a ON a.org_id = c.org_id AND a.user_id = c.user_id \
         WHERE c.org_id = ?1 AND c.user_id IN (?2, '')",
    )?;
    let mut rows = stmt.query_map(params![org_id, user_id], |r| r.get::<_, f64>(0))?;
    rows.try_fold(f64::INFINITY, |least, h| Ok(least.min(h?)))
}

impl SqliteStore {
    /// Sets the monthly cap of organisation `org_id` (`user_id` `None`) or of one of its
    /// users, for every process sharing the file. A negative or non-finite cap is refused
    /// and changes nothing.
    pub async fn set_budget_cap(&self, org_id: &str, user_id: Option<&str>, cap_usd: f64) -> Result<(), BudgetError> {
        let user = user_id.unwrap_or("");
        budget_keys(org_id, user_id.unwrap_or("-"))?;
        if !cap_usd.is_finite() || cap_usd < 0.0 {
            return Err(BudgetError(format!("a cap of {cap_usd} USD refused: it must be a finite number, 0 or more")));
        }
        let (org, user) = (org_id.to_owned(), user.to_owned());
        self.run(move |conn| {
            execute(
                conn,
                "INSERT INTO agents_budget_caps (org_id, user_id, cap_usd) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (org_id, user_id) DO UPDATE SET cap_usd = excluded.cap_usd",
                params![org, user, cap_usd],
            )
            .map(drop)
            .map_err(sql_error)
        })
        .await
        .map_err(budget_error)
    }

    /// The spend and the held headroom of a user's account (`user_id` `None`: the
    /// organisation's), in USD.
    pub async fn budget_account(&self, org_id: &str, user_id: Option<&str>) -> Result<(f64, f64), BudgetError> {
        let (org, user) = (org_id.to_owned(), user_id.unwrap_or("").to_owned());
        self.run(move |conn| {
            query_row(
                conn,
                "SELECT spend_usd, held_usd FROM agents_budget_accounts WHERE org_id = ?1 AND user_id = ?2",
                params![org, user],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map(|found| found.unwrap_or((0.0, 0.0)))
            .map_err(sql_error)
        })
        .await
        .map_err(budget_error)
    }
}

/// The budget in the state file, shared by every process that opens it. A reservation is one
/// savepoint, under a `BEGIN IMMEDIATE` transaction's write lock, of two conditional
/// `UPDATE`s (the user's account, then the organisation's), each admitting only while its cap
/// minus spend minus holds is above 0, so the guarantee of [`agents_runtime::budget`] holds across processes.
impl BudgetStore for SqliteStore {
    fn usage<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<BudgetUsage>, BudgetError>> {
        let (org, user) = (org_id.to_owned(), user_id.to_owned());
        let read = self.run(move |conn| {
            let mut stmt = conn.prepare_cached(crate::USAGE_SQL).map_err(sql_error)?;
            let rows = stmt
                .query_map(params![org, user], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?, r.get::<_, f64>(2)?))
                })
                .map_err(sql_error)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_error)
        });
        Box::pin(async move { Ok(Some(crate::usage_of(read.await.map_err(budget_error)?))) })
    }

    fn remaining<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, Result<f64, BudgetError>> {
        let (org, user) = (org_id.to_owned(), user_id.to_owned());
        let read = self.run(move |conn| sqlite_headroom(conn, &org, &user).map_err(sql_error));
        Box::pin(async move { read.await.map_err(budget_error) })
    }

    fn record<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        cost_usd: f64,
    ) -> BoxFuture<'a, Result<(), BudgetError>> {
        Box::pin(async move {
            let keys = budget_keys(org_id, user_id)?.map(|(o, u)| (o.to_owned(), u.to_owned()));
            let cost = budget_amount("a cost", cost_usd)?;
            self.run(move |conn| {
                let tx = conn.savepoint().map_err(sql_error)?;
                for (org, user) in &keys {
                    execute(
                        &tx,
                        "INSERT INTO agents_budget_accounts (org_id, user_id, spend_usd) VALUES (?1, ?2, ?3) \
                         ON CONFLICT (org_id, user_id) DO UPDATE SET spend_usd = spend_usd + excluded.spend_usd",
                        params![org, user, cost],
                    )
                    .map_err(sql_error)?;
                }
                tx.commit().map_err(sql_error)
            })
            .await
            .map_err(budget_error)
        })
    }

    fn reserve<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        estimate_usd: f64,
    ) -> BoxFuture<'a, Result<Admission, BudgetError>> {
        Box::pin(async move {
            let keys = budget_keys(org_id, user_id)?.map(|(o, u)| (o.to_owned(), u.to_owned()));
            let estimate = budget_amount("an estimate", estimate_usd)?;
            let (org, user) = (org_id.to_owned(), user_id.to_owned());
            self.run(move |conn| {
                let tx = conn.savepoint().map_err(sql_error)?;
                for (o, u) in &keys {
                    // Admits only while this account's cap (if any) has headroom beyond its
                    // spend and holds, and holds the estimate in the same statement.
                    execute(
                        &tx,
                        "INSERT INTO agents_budget_accounts (org_id, user_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                        params![o, u],
                    )
                    .map_err(sql_error)?;
                    let admitted = execute(
                        &tx,
                        "UPDATE agents_budget_accounts SET held_usd = held_usd + ?3, holds = holds + 1 \
                             WHERE org_id = ?1 AND user_id = ?2 AND COALESCE((SELECT cap_usd FROM agents_budget_caps \
                             WHERE org_id = ?1 AND user_id = ?2) - spend_usd - held_usd > 0, 1)",
                        params![o, u, estimate],
                    )
                    .map_err(sql_error)?;
                    if admitted == 0 {
                        let headroom = sqlite_headroom(&tx, &org, &user).map_err(sql_error)?;
                        // Dropping the transaction rolls the other account's hold back.
                        return Ok(Admission::Refused { headroom });
                    }
                }
                tx.commit().map_err(sql_error)?;
                Ok(Admission::Granted(Reservation { org_id: org, user_id: user, amount: estimate }))
            })
            .await
            .map_err(budget_error)
        })
    }

    fn settle(&self, reservation: Reservation, cost_usd: f64) -> BoxFuture<'_, Result<(), BudgetError>> {
        Box::pin(async move {
            let keys =
                budget_keys(&reservation.org_id, &reservation.user_id)?.map(|(o, u)| (o.to_owned(), u.to_owned()));
            let cost = budget_amount("a cost", cost_usd)?;
            let held = reservation.amount;
            self.run(move |conn| {
                let tx = conn.savepoint().map_err(sql_error)?;
                for (org, user) in &keys {
                    // `held_usd` is reset to exactly 0 when no hold is left, so rounding does
                    // not accumulate.
                    execute(
                        &tx,
                        "UPDATE agents_budget_accounts SET spend_usd = spend_usd + ?4, \
                         held_usd = CASE WHEN holds <= 1 THEN 0 ELSE MAX(held_usd - ?3, 0) END, holds = MAX(holds - 1, 0) \
                         WHERE org_id = ?1 AND user_id = ?2",
                        params![org, user, held, cost],
                    )
                    .map_err(sql_error)?;
                }
                tx.commit().map_err(sql_error)
            })
            .await
            .map_err(budget_error)
        })
    }
}
