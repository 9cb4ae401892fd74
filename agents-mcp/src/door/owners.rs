//! Which principal opened each MCP session, the event streams and the sessions being opened
//! each principal holds, and the purge of the sessions rmcp has ended.

use agents_runtime::{Principal, Runtime};
use http::Method;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The key limits are counted by: the user in their organisation.
type LimitKey = (String, String);

fn limit_key(principal: &Principal) -> LimitKey {
    (principal.org_id.clone(), principal.user_id.clone())
}

/// Which principal opened each MCP session, how many event streams each principal holds, and
/// how many sessions each principal is opening right now.
#[derive(Debug, Default)]
pub(crate) struct SessionOwners {
    owners: Mutex<HashMap<String, Principal>>,
    streams: Mutex<HashMap<LimitKey, usize>>,
    opening: Mutex<HashMap<LimitKey, usize>>,
}

impl SessionOwners {
    /// MCP sessions known (opened and not yet purged).
    pub(crate) fn count(&self) -> usize {
        lock(&self.owners).len()
    }

    pub(super) fn owned_by(&self, session: &str, principal: &Principal) -> bool {
        lock(&self.owners).get(session).is_some_and(|owner| owner == principal)
    }

    /// Takes a slot for one more session of `principal` if its open sessions and those it is
    /// opening are fewer than `max`. Counted under one lock, so concurrent `initialize`
    /// requests cannot pass the cap together.
    pub(super) fn begin_session(self: &Arc<Self>, principal: &Principal, max: usize) -> Option<Slot> {
        let key = limit_key(principal);
        let mut opening = lock(&self.opening);
        let open = lock(&self.owners).values().filter(|p| limit_key(p) == key).count();
        let n = opening.entry(key.clone()).or_insert(0);
        if open + *n >= max {
            if *n == 0 {
                opening.remove(&key);
            }
            return None;
        }
        *n += 1;
        Some(Slot { owners: self.clone(), key, kind: SlotKind::Opening })
    }

    /// Takes one event-stream slot of `principal`, if one is free.
    pub(super) fn open_stream(self: &Arc<Self>, principal: &Principal, max: usize) -> Option<Slot> {
        let key = limit_key(principal);
        let mut streams = lock(&self.streams);
        let n = streams.entry(key.clone()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Slot { owners: self.clone(), key, kind: SlotKind::Stream })
    }

    /// After a successful response: a session it created belongs to whoever opened it; a
    /// session a DELETE ended is forgotten.
    pub(super) fn settle(&self, principal: &Principal, method: &Method, asked: Option<&str>, created: Option<&str>) {
        match (asked, created) {
            (None, Some(created)) => {
                lock(&self.owners).insert(created.to_owned(), principal.clone());
            }
            (Some(ended), _) if method == Method::DELETE => {
                lock(&self.owners).remove(ended);
            }
            _ => {}
        }
    }

    /// Forgets the owners of the sessions `manager` no longer has (idle, deleted, failed);
    /// returns how many.
    async fn forget_ended(&self, manager: &LocalSessionManager) -> usize {
        let known: Vec<String> = lock(&self.owners).keys().cloned().collect();
        let mut ended = Vec::new();
        for id in known {
            if !manager.has_session(&id.as_str().into()).await.unwrap_or(false) {
                ended.push(id);
            }
        }
        if !ended.is_empty() {
            let mut map = lock(&self.owners);
            for id in &ended {
                map.remove(id);
            }
            let keep = map.len() * 2;
            map.shrink_to(keep);
        }
        ended.len()
    }
}

enum SlotKind {
    Opening,
    Stream,
}

/// A session being opened (counted until dropped; by then the session, if made, is owned) or
/// an open event stream (counted until its response body is dropped), against its principal.
pub(crate) struct Slot {
    owners: Arc<SessionOwners>,
    key: LimitKey,
    kind: SlotKind,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = lock(match self.kind {
            SlotKind::Opening => &self.owners.opening,
            SlotKind::Stream => &self.owners.streams,
        });
        if let Some(n) = counts.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

/// Every `every`: forgets the owners of sessions rmcp has closed and drops expired
/// confirmation tokens. Ends when `stop` is cancelled or the front door is dropped.
pub(super) async fn purge(
    owners: Weak<SessionOwners>,
    manager: Weak<LocalSessionManager>,
    runtime: Runtime,
    every: Duration,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is now: nothing has ended yet.
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        let (Some(owners), Some(manager)) = (owners.upgrade(), manager.upgrade()) else { return };
        let sessions = owners.forget_ended(&manager).await;
        let tokens = runtime.purge_expired();
        tracing::debug!(sessions, tokens, "purged ended MCP sessions and expired tokens");
    }
}
