//! What a session keeps between turns, and where: its owner, history, digest of results and
//! the proposal waiting for the user's next message live in the state store
//! ([`Store::save_session`](crate::store::Store::save_session)), so a session started on one
//! node goes on on any node sharing the store; direct sessions: tool calls without a model
//! loop.
//!
//! A turn loads the session when it starts (binding it to its principal on first use, or
//! starting a fresh context when it was idle or its user came back under another role) and
//! saves what it changed when it ends, over the revision it read: when another node (or
//! another turn of this one) saved the session meanwhile, the turn's changes (its input and
//! answer, its results, its proposal) are applied again to what is there and saved again, so
//! no turn is lost silently. A session ended, expired or rebound to another role meanwhile does
//! not take the turn's text.

use super::context::{CallRef, RunCtx};
use super::conversation::{Conversation, Delta, SessionState, owner_of};
use super::decision::Undecided;
use super::gate::{InPlace, gate_call};
use super::outcome::StartError;
use super::record::RecordFields;
use super::shared::{Inner, append_detached, keep_running};
use super::sync::lock;
use crate::audit::AuditStatus;
use crate::events::Event;
use crate::store::{SessionSaved, answer_now};
use crate::tool::Registry;
use agents_core::{Principal, ToolSpec};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// How often a turn's save (or a session's binding) is tried again over a newer revision
/// before it gives up.
pub(super) const SAVE_ATTEMPTS: usize = 8;

/// Why a session ended, as the final records of the proposals it left open say.
#[derive(Debug, Clone, Copy)]
pub(super) enum SessionEnd {
    /// [`Runtime::end_session`](super::Runtime::end_session).
    Ended,
    /// Unused for longer than the idle timeout.
    Idle,
    /// Its user came back under another role: a fresh context.
    RoleChanged,
    /// The least recently used of this node's sessions when a new one went over the cap
    /// ([`RuntimeBuilder::max_sessions`](super::RuntimeBuilder::max_sessions)).
    Evicted,
}

impl SessionEnd {
    fn says(self) -> &'static str {
        match self {
            SessionEnd::Ended => "the session was ended",
            SessionEnd::Idle => "the session expired after its idle time",
            SessionEnd::RoleChanged => "the session was started afresh under another role",
            SessionEnd::Evicted => "the session was ended to keep the runtime within its cap on sessions",
        }
    }
}

fn unavailable(e: crate::store::StoreError) -> StartError {
    StartError::StateUnavailable(e.to_string())
}

impl Inner {
    /// Expired tokens and idle sessions dropped (see [`Runtime::purge_expired`]).
    pub(super) fn purge_expired(self: &Arc<Self>) -> usize {
        self.services.tokens.purge_expired() + self.purge_idle_sessions()
    }

    /// Starts the sweep timer ([`RuntimeBuilder::sweep_every`]) on `handle`, unless it runs.
    pub(super) fn keep_swept(self: &Arc<Self>, handle: &tokio::runtime::Handle) {
        let Some(every) = self.settings.sweep_every else { return };
        let inner = Arc::downgrade(self);
        keep_running(&self.live.sweeper, || {
            Some(handle.spawn(async move {
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let Some(inner) = inner.upgrade() else { return };
                    let swept = inner.purge_expired();
                    if swept > 0 {
                        tracing::debug!(swept, "the runtime's sweep dropped expired tokens and idle sessions");
                    }
                }
            }))
        });
    }

    /// Binds `session_id` to `principal` in the state store on first use, and returns its
    /// conversation; refuses a session bound to another user or organisation. A session idle
    /// for longer than the idle timeout, or bound to the same person under another role,
    /// starts afresh: nothing read under one role (history, digest, a pending proposal or an
    /// approval) reaches a run under another, the old context's tokens are revoked and its
    /// open proposals end (see [`Inner::end_context`]). Every decision is one conditional
    /// save in the store, so it holds against other nodes.
    pub(super) fn bind_session(
        self: &Arc<Self>,
        session_id: &str,
        principal: &Principal,
    ) -> crate::BoxFuture<'static, Result<Conversation, StartError>> {
        let (inner, session_id, principal) = (self.clone(), session_id.to_owned(), principal.clone());
        Box::pin(async move {
            let store = &inner.services.store;
            let idle = inner.settings.session_idle_timeout;
            for _ in 0..SAVE_ATTEMPTS {
                let found = store.load_session(&session_id, idle).await.map_err(unavailable)?;
                let (over, ended, why) = match &found {
                    Some(r) if r.user_id != principal.user_id || r.org_id != principal.org_id => {
                        return Err(StartError::SessionNotYours(session_id));
                    }
                    Some(r) if r.role == principal.role => {
                        inner.touch(&session_id, &principal, false, r.version);
                        return Ok(Conversation::from_record(r));
                    }
                    Some(r) => (r.version, Conversation::from_record(r).pending, SessionEnd::RoleChanged),
                    None => (0, None, SessionEnd::Idle),
                };
                let fresh = Conversation::default().to_record(&session_id, &principal, over);
                match store.save_session(&fresh, idle).await.map_err(unavailable)? {
                    SessionSaved::Stored { version } => {
                        // A context replaced here (another role, or idle), or one this node
                        // held that expired or ended elsewhere, ends with its proposals.
                        let held_here = inner.touch(&session_id, &principal, true, version);
                        if over > 0 || version > 1 || held_here {
                            inner.services.tokens.revoke_session(&session_id);
                            inner.end_context(&session_id, why, ended.map(|p| p.call_id)).await;
                        }
                        return Ok(Conversation { version, ..Conversation::default() });
                    }
                    SessionSaved::NotYours => return Err(StartError::SessionNotYours(session_id)),
                    SessionSaved::Conflict => continue,
                }
            }
            Err(StartError::StateUnavailable(format!(
                "session `{session_id}` kept changing under concurrent writers; try again"
            )))
        })
    }

    /// Notes on this node that `principal` uses the session now, found at the store's
    /// `version`; `fresh` starts its local context afresh. Whether this node held the session
    /// under another owner (or `fresh` over a context it held). A session new to this node
    /// that takes it over its cap evicts the least recently used ones ([`Inner::evict`]).
    fn touch(self: &Arc<Self>, session_id: &str, principal: &Principal, fresh: bool, version: u64) -> bool {
        let mut sessions = lock(&self.live.sessions);
        let evicted = over_cap(&mut sessions, session_id, self.settings.max_sessions);
        let s = sessions.entry(session_id.to_owned()).or_default();
        let me = owner_of(principal);
        let held_other = s.owner.as_ref().is_some_and(|o| *o != me) || (fresh && s.owner.is_some());
        if held_other || fresh {
            // Cleared in place: a run that took the ledger before binding sees the fresh one.
            *lock(&s.provenance) = crate::provenance::Ledger::default();
            s.covers = Some(version);
        } else if s.covers != Some(version) {
            // Turns of this session ran where this ledger did not see their results.
            lock(&s.provenance).mark_partial();
            s.covers = Some(version);
        }
        s.owner = Some(me);
        s.last_used = Some(tokio::time::Instant::now());
        drop(sessions);
        self.evict(evicted);
        held_other
    }

    /// Ends sessions evicted by the cap: with an in-process store (whose sessions live in
    /// this process's memory) each ends as [`Runtime::end_session`](super::Runtime::end_session)
    /// ends one (its state dropped from the store, its tokens revoked, its open proposals
    /// ended with their final records); with a shared store only this node's own state of it
    /// goes (the session goes on from the store, and the egress check fails closed for it on
    /// this node, as for a session whose turns ran elsewhere).
    fn evict(self: &Arc<Self>, evicted: Vec<String>) {
        if evicted.is_empty() {
            return;
        }
        tracing::warn!(
            count = evicted.len(),
            cap = self.settings.max_sessions,
            "sessions evicted: this node holds as many sessions as its cap allows"
        );
        if !self.services.store.answers_at_once() {
            return;
        }
        for id in evicted {
            self.services.tokens.revoke_session(&id);
            let inner = self.clone();
            self.in_background(async move {
                let pending = match inner.services.store.load_session(&id, inner.settings.session_idle_timeout).await {
                    Ok(found) => found.and_then(|r| Conversation::from_record(&r).pending).map(|p| p.call_id),
                    Err(_) => None,
                };
                if let Err(e) = inner.services.store.delete_session(&id).await {
                    tracing::warn!(session = %id, error = %e, "an evicted session could not be deleted");
                }
                inner.end_context(&id, SessionEnd::Evicted, pending).await;
            });
        }
    }

    /// Saves what a turn changed, over the revision it read; on a conflict, applies the turn
    /// again to the session as the store holds it now and saves that. A session ended,
    /// expired, or rebound to another role meanwhile does not take the turn. `Err` when the
    /// store failed or writers kept conflicting: the turn is not remembered (said in the log).
    pub(super) async fn save_turn(
        &self,
        session_id: &str,
        principal: &Principal,
        mut base: Conversation,
        delta: &Delta,
        input: &str,
        answer: &str,
        history_messages: usize,
    ) -> Result<(), String> {
        let idle = self.settings.session_idle_timeout;
        for _ in 0..SAVE_ATTEMPTS {
            let mut next = base.clone();
            delta.apply(&mut next, input, answer, history_messages, self.settings.history_bytes);
            let record = next.to_record(session_id, principal, base.version);
            match self.services.store.save_session(&record, idle).await.map_err(|e| e.to_string())? {
                SessionSaved::Stored { version } => {
                    if let Some(s) = lock(&self.live.sessions).get_mut(session_id) {
                        s.last_used = Some(tokio::time::Instant::now());
                        // The ledger still holds every turn only if it did over the
                        // revision this one was saved over.
                        if s.covers == Some(base.version) {
                            s.covers = Some(version);
                        }
                    }
                    return Ok(());
                }
                SessionSaved::NotYours => return Ok(()),
                SessionSaved::Conflict => {}
            }
            match self.services.store.load_session(session_id, idle).await.map_err(|e| e.to_string())? {
                Some(r)
                    if r.user_id == principal.user_id && r.org_id == principal.org_id && r.role == principal.role =>
                {
                    base = Conversation::from_record(&r);
                }
                // Ended, expired, or rebound to another role: the turn's text goes nowhere.
                _ => return Ok(()),
            }
        }
        Err(format!("session `{session_id}` kept changing under concurrent writers ({SAVE_ATTEMPTS} attempts)"))
    }

    /// Ends a session: its state is dropped from the store, its tokens revoked and its open
    /// proposals ended. Refused for a session bound to another user or organisation.
    /// `Ok(false)` when there was none (or it was idle already).
    pub(super) async fn end_session(
        self: &Arc<Self>,
        session_id: &str,
        principal: &Principal,
    ) -> Result<bool, StartError> {
        let found = self
            .services
            .store
            .load_session(session_id, self.settings.session_idle_timeout)
            .await
            .map_err(unavailable)?;
        let local = lock(&self.live.sessions).get(session_id).and_then(|s| s.owner.clone());
        let theirs = |user: &str, org: &str| user != principal.user_id || org != principal.org_id;
        if found.as_ref().is_some_and(|r| theirs(&r.user_id, &r.org_id))
            || local.as_ref().is_some_and(|(user, org, _)| theirs(user, org))
        {
            return Err(StartError::SessionNotYours(session_id.to_owned()));
        }
        let existed = match &found {
            Some(_) => self.services.store.delete_session(session_id).await.map_err(unavailable)?,
            None => false,
        };
        let existed = lock(&self.live.sessions).remove(session_id).is_some() || existed;
        let pending = found.and_then(|r| Conversation::from_record(&r).pending).map(|p| p.call_id);
        self.end_context(session_id, SessionEnd::Ended, pending).await;
        self.services.tokens.revoke_session(session_id);
        Ok(existed)
    }

    /// Drops the sessions this node has not seen used for longer than the idle timeout (and
    /// that have no model run under way here), with their tokens, and ends their open
    /// proposals; drops the store's idle sessions too (at once when the store answers at once,
    /// otherwise in the background). Returns how many this node held.
    pub(super) fn purge_idle_sessions(self: &Arc<Self>) -> usize {
        let now = tokio::time::Instant::now();
        let mut sessions = lock(&self.live.sessions);
        let idle: Vec<String> = sessions
            .iter()
            .filter(|(_, s)| s.runs == 0)
            .filter(|(_, s)| s.last_used.is_some_and(|t| now.duration_since(t) > self.settings.session_idle_timeout))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle {
            sessions.remove(id);
        }
        if !idle.is_empty() {
            let keep = sessions.len() * 2;
            sessions.shrink_to(keep);
        }
        drop(sessions);
        for id in &idle {
            self.services.tokens.revoke_session(id);
            let (inner, id) = (self.clone(), id.clone());
            self.in_background(async move { inner.end_context(&id, SessionEnd::Idle, None).await });
        }
        let (store, timeout) = (self.services.store.clone(), self.settings.session_idle_timeout);
        crate::store::now_or_in_background("prune idle sessions", async move { store.prune_sessions(timeout).await });
        idle.len()
    }

    /// Runs `work` now if it finishes at once (an in-memory store), otherwise as a task that
    /// [`Runtime::records_settled`](super::Runtime::records_settled) waits for.
    pub(super) fn in_background(self: &Arc<Self>, work: impl Future<Output = ()> + Send + 'static) {
        let Err(work) = answer_now(Box::pin(work)) else { return };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                self.live.detached.enter();
                let inner = self.clone();
                drop(handle.spawn(async move {
                    work.await;
                    inner.live.detached.leave();
                }));
            }
            Err(_) => tracing::warn!("a session's proposals could not be ended: no tokio runtime runs"),
        }
    }

    /// A session's context ended (`why`): every proposal in it resolves with one final record
    /// (see [`Inner::end_proposals_of`]).
    pub(super) async fn end_context(self: &Arc<Self>, session_id: &str, why: SessionEnd, stored: Option<String>) {
        self.end_proposals_of(session_id, why.says(), stored).await;
    }
}

/// Makes room for `session_id` when it is new to `sessions` and they hold `max` already:
/// removes the least recently used sessions without a model run under way (a session not yet
/// marked used counts as used now) until the new one fits, and returns their ids. Sessions
/// with runs under way are never removed, so the count may exceed `max` by those.
fn over_cap(
    sessions: &mut std::collections::HashMap<String, SessionState>,
    session_id: &str,
    max: usize,
) -> Vec<String> {
    let mut evicted = Vec::new();
    if sessions.contains_key(session_id) {
        return evicted;
    }
    let now = tokio::time::Instant::now();
    while sessions.len() >= max.max(1) {
        let oldest = sessions
            .iter()
            .filter(|(_, s)| s.runs == 0)
            .min_by_key(|(_, s)| s.last_used.unwrap_or(now))
            .map(|(id, _)| id.clone());
        let Some(id) = oldest else { break };
        sessions.remove(&id);
        evicted.push(id);
    }
    evicted
}

/// Calls tools of agent `A` for one principal without a model loop (an MCP server, a UI
/// button): the same availability snapshot, strict parse, interceptors, confirmation and
/// audit as a run.
///
/// Like a run, a direct session writes `run_started` when it opens and `run_finished` when it
/// is dropped (reason `closed`, or the [`Undecided::code`] it was stopped with).
pub struct DirectSession<A: Registry> {
    ctx: Arc<RunCtx<A>>,
    /// The session id is the caller's own (an MCP session's): its state is dropped with it.
    ephemeral: bool,
}

impl<A: Registry> Drop for DirectSession<A> {
    fn drop(&mut self) {
        let mut f = RecordFields::new(AuditStatus::RunFinished);
        f.reason = Some(self.ctx.stop_reason.get().map_or("closed", |u| u.code()).to_owned());
        append_detached(&self.ctx.inner, self.ctx.ids.record(f));
        if self.ephemeral {
            // The id is never reused (an MCP transport's): its binding goes, here and in the store.
            let id = self.ctx.ids.session_id.to_string();
            lock(&self.ctx.inner.live.sessions).remove(&id);
            let store = self.ctx.inner.services.store.clone();
            crate::store::now_or_in_background("drop an ended direct session", async move {
                store.delete_session(&id).await
            });
        }
    }
}

impl<A: Registry> std::fmt::Debug for DirectSession<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectSession").field("run_id", &self.ctx.ids.run_id).finish_non_exhaustive()
    }
}

/// The result of a direct call.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectResult {
    /// The result, or `{"error": ...}`, or a structured confirmation-required / handoff result.
    pub content: Value,
    /// Whether it is an error for the caller.
    pub is_error: bool,
}

impl<A: Registry> DirectSession<A> {
    pub(super) fn new(ctx: Arc<RunCtx<A>>) -> Self {
        DirectSession { ctx, ephemeral: false }
    }

    /// The tools this principal can reach (the availability snapshot), sorted by name.
    pub fn available(&self) -> Vec<&'static ToolSpec> {
        self.ctx.available().map(|i| A::tools()[i]).collect()
    }

    /// The cached input schema of an available tool.
    pub fn input_schema(&self, name: &str) -> Option<&'static Value> {
        A::entry_at(self.ctx.available_index(name)?).map(|e| (e.schema)())
    }

    /// The session's run id (every audit record of this session carries it).
    pub fn run_id(&self) -> &str {
        self.ctx.ids.run_id.as_str()
    }

    /// Subscribes to this session's events.
    pub fn subscribe(&self) -> mpsc::Receiver<Event> {
        self.ctx.recorder.bus.subscribe()
    }

    /// Stops the session: an action waiting for a person ends as `skipped` with `why`'s code,
    /// and later action calls end the same way at once. The first reason given is kept.
    pub fn stop(&self, why: Undecided) {
        let _ = self.ctx.stop_reason.set(why);
        self.ctx.cancel.cancel();
    }

    /// Drops the session's state in the runtime (its owner binding) when it ends: for session
    /// ids that are never reused, such as an MCP transport's.
    pub fn ephemeral(mut self) -> Self {
        self.ephemeral = true;
        self
    }

    /// Calls a tool through the gate. `arguments` is the raw JSON text.
    pub async fn call(&self, call_id: &str, name: &str, arguments: &str) -> DirectResult {
        let out = await_in_place!(gate_call::<_, InPlace>(
            &self.ctx,
            CallRef { id: call_id, given_id: call_id, name, arguments }
        ));
        DirectResult { content: out.content, is_error: out.is_error }
    }
}
