//! How a run writes its records and events: the [`Recorder`], made once per run and borrowed
//! by every call (the gate, the ledger, the run loop). It holds the audit sink (through the
//! runtime's shared state), the run's ids that every record repeats, the event bus, and the
//! run's list of calls that follows the records the log took.

use super::call::{CallOutcome, CallRef};
use super::outcome::{CallStatus, CallSummary};
use super::record::{RESULT_TEXT_KEPT, RecordFields, RecordIds};
use super::shared::{Inner, append_detached, mark_recorded, settles};
use super::sync::lock;
use crate::BoxFuture;
use crate::audit::{AuditError, AuditResult, AuditStatus};
use crate::events::{Event, EventBus};
use agents_core::audit::AuditValues;
use agents_core::redact::{SecretSchema, redact};
use agents_core::{SharedStr, SharedValue, Tier, ToolSpec};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// How one run writes its records and events.
pub(in crate::run) struct Recorder {
    /// The runtime's shared state: its audit sink, the final records this node owes, the
    /// redaction settings.
    inner: Arc<Inner>,
    /// The run's ids and who it acts for, as every audit record repeats them.
    pub(in crate::run) ids: Arc<RecordIds>,
    /// The run's live view.
    pub(in crate::run) bus: Arc<EventBus>,
    /// A direct session's (which may live long) keeps no list of calls.
    direct: bool,
    /// The run's tool calls with their last status the log took (runs only).
    pub(in crate::run) calls: Mutex<Vec<CallSummary>>,
}

/// Whether the log took a record ([`Recorder::audit`]): known at once, or by a boxed future
/// (a sink that writes later, or a record that settles a stored proposal).
#[must_use = "a record's answer says whether anything may run"]
pub(in crate::run) struct Audited<'a>(Option<AuditedState<'a>>);

enum AuditedState<'a> {
    Now(Result<(), AuditError>),
    Later(BoxFuture<'a, Result<(), AuditError>>),
}

impl Future for Audited<'_> {
    type Output = Result<(), AuditError>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        match self.0.take() {
            Some(AuditedState::Now(answer)) => std::task::Poll::Ready(answer),
            Some(AuditedState::Later(mut later)) => {
                let polled = later.as_mut().poll(cx);
                if polled.is_pending() {
                    self.0 = Some(AuditedState::Later(later));
                }
                polled
            }
            None => panic!("`Audited` polled after it resolved"),
        }
    }
}

impl Recorder {
    /// The recorder of a run (`direct`: a direct session's) under `ids`, publishing on `bus`.
    pub(in crate::run) fn new(inner: &Arc<Inner>, ids: Arc<RecordIds>, bus: Arc<EventBus>, direct: bool) -> Self {
        Recorder { inner: inner.clone(), ids, bus, direct, calls: Mutex::new(Vec::new()) }
    }

    /// Publishes an event; it is built only when someone subscribes (events are a view, the
    /// audit log is the record).
    pub(in crate::run) fn emit(&self, e: impl FnOnce() -> Event) {
        if self.bus.has_subscribers() {
            self.bus.publish(e());
        }
    }

    /// Emits a `tool_result` event with the result redacted.
    pub(in crate::run) fn emit_result(&self, call_id: &str, tool: &str, status: AuditStatus, result: Option<&Value>) {
        self.emit(|| Event::ToolResult {
            run_id: self.ids.run_id.to_string(),
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            status,
            result: result.map(|v| redact(v, None, &self.inner.settings.redaction)),
        });
    }

    /// Builds the record now and hands it to the sink; the future only waits for the sink
    /// (it holds no record, so the gate's own future stays small). The sealed record the sink
    /// returns is not needed here: it is dropped where it arrives rather than passed up.
    ///
    /// A sink that answers at once, for a record that settles no stored proposal (every read
    /// call's), is answered here: the run's list of calls follows the record now, and the
    /// future only hands the answer over (a few words, moved with the gate's future at no
    /// cost). Otherwise the rest waits in a boxed future.
    pub(in crate::run) fn audit(&self, f: RecordFields) -> Audited<'_> {
        crate::telemetry::audited(f.status, f.tool.as_deref(), f.tier);
        // A record that moves a call: the run's list of calls follows it once the log took it.
        let moved = match (&f.call_id, CallStatus::of_audit(f.status)) {
            (Some(id), Some(status)) if !self.direct => Some((id.clone(), f.tool.clone(), f.tier, status)),
            _ => None,
        };
        let settled = settles(&self.inner.live, f.call_id.as_ref(), f.status);
        let record = self.ids.record(f);
        // A sink that answers at once has its sealed record dropped here.
        let answer = self.inner.services.audit.append(record).outcome_now();
        let answer = match answer {
            Ok(answer) if settled.is_none() => {
                self.took(&answer, moved);
                return Audited(Some(AuditedState::Now(answer)));
            }
            Ok(answer) => Ok(answer),
            Err(pending) => Err(pending),
        };
        Audited(Some(AuditedState::Later(Box::pin(async move {
            let answer = match answer {
                Ok(answer) => answer,
                Err(pending) => pending.await.map(drop),
            };
            self.took(&answer, moved);
            if let Some(id) = settled {
                if answer.is_ok() {
                    mark_recorded(&self.inner.services, &id).await;
                } else {
                    // Still owed: a later final record of the call marks it.
                    self.inner.live.settling.insert(id);
                }
            }
            answer
        }))))
    }

    /// What follows the log's answer to a record: a refusal is logged; a record taken moves its
    /// call in the run's list (`moved`).
    fn took(
        &self,
        answer: &Result<(), AuditError>,
        moved: Option<(SharedStr, Option<SharedStr>, Option<Tier>, CallStatus)>,
    ) {
        match answer {
            Err(e) => tracing::error!(run_id = %self.ids.run_id, error = %e, "audit write failed"),
            Ok(()) => {
                if let Some((id, tool, tier, status)) = moved {
                    self.note_call(&id, tool, tier, status);
                }
            }
        }
    }

    /// Notes a call's new status in the run's list (a call first seen is added when its tool
    /// is known).
    fn note_call(&self, call_id: &str, tool: Option<SharedStr>, tier: Option<Tier>, status: CallStatus) {
        let mut calls = lock(&self.calls);
        if let Some(c) = calls.iter_mut().rev().find(|c| c.call_id == call_id) {
            c.status = status;
            if c.tier.is_none() {
                c.tier = tier;
            }
        } else if let Some(tool) = tool {
            // Room for one at first: most runs make few calls, and a waiting run keeps its list.
            if calls.capacity() == 0 {
                calls.reserve_exact(1);
            }
            calls.push(CallSummary { call_id: call_id.to_owned(), tool: tool.to_string(), tier, status });
        }
    }

    /// Audits and tells the model a call was refused; nothing ran.
    /// Boxed: refusals are the rare path, and the gate's future should not carry their state.
    pub(in crate::run) fn deny<'a>(
        &'a self,
        call: CallRef<'a>,
        spec: Option<&'static ToolSpec>,
        args: Option<Value>,
        reason: String,
    ) -> BoxFuture<'a, CallOutcome> {
        Box::pin(async move {
            let mut f = RecordFields::new(AuditStatus::Denied);
            f.call_id = Some(call.id.into());
            f.tool = Some(call.name.into());
            f.tier = spec.map(|s| s.tier);
            f.import = spec.and_then(|s| self.import_of(s));
            f.reason = Some(reason.clone());
            f.args = args.map(SharedValue::from);
            let _ = self.audit(f).await;
            self.emit(|| Event::ToolDenied {
                run_id: self.ids.run_id.to_string(),
                call_id: call.id.to_owned(),
                tool: call.name.to_owned(),
                reason: reason.clone(),
            });
            CallOutcome::err(reason)
        })
    }

    pub(in crate::run) fn redact_args(&self, schema: SecretSchema<'_>, args: &Value) -> Value {
        schema.redact(args, &self.inner.settings.redaction)
    }

    /// What the records of a call of `spec` say of the MCP server it is imported from (none
    /// for a tool of this program): the server, where this runtime reaches it, its tool and
    /// the pin. Boxed: most tools are the program's own, and the records' fields and a
    /// waiting call's owed record keep room for it.
    pub(in crate::run) fn import_of(&self, spec: &ToolSpec) -> Option<Box<crate::audit::AuditImport>> {
        let import = spec.import?;
        let source = self.inner.services.mcp_imports.as_ref().and_then(|i| i.source_of(import.server));
        Some(Box::new(crate::audit::AuditImport {
            server: import.server.to_owned(),
            source,
            tool: import.tool.to_owned(),
            sha256: import.sha256.to_owned(),
            listed_sha256: None,
        }))
    }

    /// What a record keeps of a result: its keyed digest ([`TokenStore::result_mac`]), or the
    /// redacted value under [`AuditValues::Full`].
    ///
    /// [`TokenStore::result_mac`]: crate::token::TokenStore::result_mac
    pub(in crate::run) fn result_for_audit(&self, schema_free: &Value) -> AuditResult {
        if self.inner.settings.values == AuditValues::Full {
            AuditResult::Value(redact(schema_free, None, &self.inner.settings.redaction))
        } else {
            self.digest_within(schema_free, usize::MAX).expect("no canonical text is longer than usize::MAX")
        }
    }

    /// The keyed digest of a result whose canonical JSON text is at most `max` bytes long;
    /// `None` when it is longer, or under [`AuditValues::Full`] (the value is recorded). The text is written
    /// once, for both the length and the digest, into a buffer each thread keeps between calls
    /// (dropped when a large result grew it).
    pub(in crate::run) fn digest_within(&self, schema_free: &Value, max: usize) -> Option<AuditResult> {
        if self.inner.settings.values == AuditValues::Full {
            return None;
        }
        thread_local! {
            static TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        TEXT.with_borrow_mut(|text| {
            text.clear();
            agents_core::canonical::write_to(schema_free, text);
            let digest = (text.len() <= max)
                .then(|| AuditResult::Sha256(self.inner.services.tokens.result_mac(text.as_bytes())));
            if text.capacity() > RESULT_TEXT_KEPT {
                *text = String::new();
            }
            digest
        })
    }

    /// Writes a record of the run nobody waits for (see `shared::append_detached`).
    pub(in crate::run) fn append_detached(&self, f: RecordFields) {
        append_detached(&self.inner, self.ids.record(f));
    }
}
