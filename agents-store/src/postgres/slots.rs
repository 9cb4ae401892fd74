//! Run slots: the concurrent runs each organisation and user may hold, as leases.

use super::connection::{PostgresStore, abandon, pg_error};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{SlotId, SlotOwner, StoreResult};
use futures::future::join5;
use std::time::Duration;

/// [`Store::acquire_slot`](crate::Store::acquire_slot).
pub(super) fn acquire_slot<'a>(
    store: &'a PostgresStore,
    owner: &'a SlotOwner,
    cap: u32,
    lease: Duration,
) -> BoxFuture<'a, StoreResult<Option<SlotId>>> {
    let owned = store.clone();
    let owner = owner.clone();
    store.spawned(async move {
        let store = owned;
        let client = store.client().await?;
        let lock = client
            .prepare_cached(
                "INSERT INTO agents_slot_owners (org_id, user_id) VALUES ($1, $2) \
                 ON CONFLICT (org_id, user_id) DO UPDATE SET org_id = EXCLUDED.org_id",
            )
            .await
            .map_err(pg_error)?;
        let expire = client
            .prepare_cached("DELETE FROM agents_run_slots WHERE org_id = $1 AND user_id = $2 AND lease_until <= now()")
            .await
            .map_err(pg_error)?;
        let take = client
            .prepare_cached(
                "INSERT INTO agents_run_slots (id, org_id, user_id, lease_until) \
                 SELECT $3, $1, $2, now() + $4::BIGINT * interval '1 millisecond' \
                 WHERE (SELECT count(*) FROM agents_run_slots WHERE org_id = $1 AND user_id = $2) < $5::BIGINT \
                 RETURNING id",
            )
            .await
            .map_err(pg_error)?;
        let id = uuid::Uuid::new_v4().to_string();
        let (org, user, lease_ms, cap) = (&owner.org_id, &owner.user_id, millis(lease), i64::from(cap));
        // One pipeline, one round trip. The statements run in order on the server: the
        // owner's row lock is held before the count is taken, so the count sees every slot
        // committed by whoever held the lock before.
        let (begin, locked, expired, taken, commit) = join5(
            client.batch_execute("BEGIN"),
            client.execute(&lock, &[org, user]),
            client.execute(&expire, &[org, user]),
            client.query_opt(&take, &[org, user, &id, &lease_ms, &cap]),
            client.batch_execute("COMMIT"),
        )
        .await;
        let outcome = begin.and(locked).and(expired).and(taken).and_then(|t| commit.map(|()| t));
        match outcome {
            Ok(taken) => Ok(taken.map(|_| SlotId(id))),
            Err(e) => {
                abandon(&client).await;
                Err(pg_error(e))
            }
        }
    })
}

/// [`Store::renew_slot`](crate::Store::renew_slot).
pub(super) fn renew_slot<'a>(
    store: &'a PostgresStore,
    slot: &'a SlotId,
    lease: Duration,
) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client
            .prepare_cached(
                "UPDATE agents_run_slots SET lease_until = now() + $2::BIGINT * interval '1 millisecond' \
                 WHERE id = $1",
            )
            .await
            .map_err(pg_error)?;
        let n = client.execute(&stmt, &[&slot.0, &millis(lease)]).await.map_err(pg_error)?;
        Ok(n == 1)
    })
}

/// [`Store::slot_held`](crate::Store::slot_held).
pub(super) fn slot_held<'a>(store: &'a PostgresStore, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM agents_run_slots WHERE id = $1 AND lease_until > now())")
            .await
            .map_err(pg_error)?;
        let row = client.query_one(&stmt, &[&slot.0]).await.map_err(pg_error)?;
        Ok(row.get(0))
    })
}

/// [`Store::release_slot`](crate::Store::release_slot).
pub(super) fn release_slot<'a>(store: &'a PostgresStore, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<()>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client.prepare_cached("DELETE FROM agents_run_slots WHERE id = $1").await.map_err(pg_error)?;
        client.execute(&stmt, &[&slot.0]).await.map_err(pg_error).map(drop)
    })
}

/// [`Store::active_slots`](crate::Store::active_slots).
pub(super) fn active_slots<'a>(store: &'a PostgresStore, owner: &'a SlotOwner) -> BoxFuture<'a, StoreResult<u32>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT count(*) FROM agents_run_slots WHERE org_id = $1 AND user_id = $2 AND lease_until > now()",
            )
            .await
            .map_err(pg_error)?;
        let row = client.query_one(&stmt, &[&owner.org_id, &owner.user_id]).await.map_err(pg_error)?;
        Ok(u32::try_from(row.get::<_, i64>(0)).unwrap_or(u32::MAX))
    })
}
