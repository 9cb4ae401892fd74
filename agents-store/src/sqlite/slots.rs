//! Run slots: the concurrent runs each organisation and user may hold, as leases.

use super::connection::{SqliteStore, execute, now_ms, query_row, sql_error};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{SlotId, SlotOwner, StoreResult};
use rusqlite::params;
use std::time::Duration;

/// [`Store::acquire_slot`](crate::Store::acquire_slot).
pub(super) fn acquire_slot<'a>(
    store: &'a SqliteStore,
    owner: &'a SlotOwner,
    cap: u32,
    lease: Duration,
) -> BoxFuture<'a, StoreResult<Option<SlotId>>> {
    let owner = owner.clone();
    store.run(move |conn| {
        // Under the batch's write lock (`BEGIN IMMEDIATE`), taken before the count: no other
        // connection or process can insert between the count and the insert. A refusal keeps
        // the expired slots' deletion, which any later acquisition would make as well.
        let now = now_ms();
        execute(
            conn,
            "DELETE FROM agents_run_slots WHERE org_id = ?1 AND user_id = ?2 AND lease_until <= ?3",
            params![owner.org_id, owner.user_id, now],
        )
        .map_err(sql_error)?;
        let held: i64 = query_row(
            conn,
            "SELECT count(*) FROM agents_run_slots WHERE org_id = ?1 AND user_id = ?2",
            params![owner.org_id, owner.user_id],
            |r| r.get(0),
        )
        .map_err(sql_error)?;
        if held >= i64::from(cap) {
            return Ok(None);
        }
        let id = uuid::Uuid::new_v4().to_string();
        execute(
            conn,
            "INSERT INTO agents_run_slots (id, org_id, user_id, lease_until) VALUES (?1, ?2, ?3, ?4)",
            params![id, owner.org_id, owner.user_id, now.saturating_add(millis(lease))],
        )
        .map_err(sql_error)?;
        Ok(Some(SlotId(id)))
    })
}

/// [`Store::renew_slot`](crate::Store::renew_slot).
pub(super) fn renew_slot<'a>(
    store: &'a SqliteStore,
    slot: &'a SlotId,
    lease: Duration,
) -> BoxFuture<'a, StoreResult<bool>> {
    let id = slot.0.clone();
    store.run(move |conn| {
        let now = now_ms();
        execute(
            conn,
            "UPDATE agents_run_slots SET lease_until = ?2 WHERE id = ?1",
            params![id, now.saturating_add(millis(lease))],
        )
        .map(|n| n == 1)
        .map_err(sql_error)
    })
}

/// [`Store::slot_held`](crate::Store::slot_held).
pub(super) fn slot_held<'a>(store: &'a SqliteStore, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<bool>> {
    let id = slot.0.clone();
    store.run(move |conn| {
        query_row(
            conn,
            "SELECT EXISTS (SELECT 1 FROM agents_run_slots WHERE id = ?1 AND lease_until > ?2)",
            params![id, now_ms()],
            |r| r.get(0),
        )
        .map_err(sql_error)
    })
}

/// [`Store::release_slot`](crate::Store::release_slot).
pub(super) fn release_slot<'a>(store: &'a SqliteStore, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<()>> {
    let id = slot.0.clone();
    store
        .run(move |conn| execute(conn, "DELETE FROM agents_run_slots WHERE id = ?1", [id]).map(drop).map_err(sql_error))
}

/// [`Store::active_slots`](crate::Store::active_slots).
pub(super) fn active_slots<'a>(store: &'a SqliteStore, owner: &'a SlotOwner) -> BoxFuture<'a, StoreResult<u32>> {
    let owner = owner.clone();
    store.run(move |conn| {
        query_row(
            conn,
            "SELECT count(*) FROM agents_run_slots WHERE org_id = ?1 AND user_id = ?2 AND lease_until > ?3",
            params![owner.org_id, owner.user_id, now_ms()],
            |r| r.get(0),
        )
        .map_err(sql_error)
    })
}
