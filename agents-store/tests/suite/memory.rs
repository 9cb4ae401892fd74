//! The in-memory store against the common contract and races (one process, two handles of
//! one store).

use crate::common;

use agents_runtime::store::{MemoryStore, Store};
use std::sync::Arc;

#[tokio::test]
async fn memory_store_keeps_the_contract() {
    common::conformance(&MemoryStore::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_races() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    common::race_redemptions(store.clone(), store.clone()).await;
    common::race_tree_closes(store.clone(), store.clone()).await;
    common::race_slots(store.clone(), store.clone()).await;
    common::race_session_saves(store.clone(), store.clone()).await;
    common::proposal_across(store.clone(), store.clone()).await;
    common::take_over_across(store.clone(), store.clone()).await;
    common::audit_across(store.clone(), store).await;
}
