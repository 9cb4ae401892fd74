//! What the runtime's records keep of a call's values: the one place every record passes on
//! its way to the application's sink, so no path of the run (a call, a refusal, a resumption,
//! a record nobody waits for) writes a value the setting omits.

use crate::BoxFuture;
use crate::audit::{Appended, AuditError, AuditRecord, AuditSink};
use crate::token::TokenStore;
use agents_core::SharedValue;
use agents_core::audit::{AuditValues, omit_args, omit_in_text, values_omitted};
use std::sync::{Arc, Mutex, PoisonError};

/// The application's sink behind the runtime's [`AuditValues`] setting. Under
/// [`AuditValues::Omitted`] a record's arguments become their names with a keyed digest of each
/// value ([`TokenStore::value_mac`]), and the argument values are replaced in its reason; the
/// other settings hand records on unchanged (the result's form is chosen where it is recorded).
pub(in crate::run) struct ValuesSink {
    sink: Arc<dyn AuditSink>,
    values: AuditValues,
    key: TokenStore,
    /// The arguments of the last call omitted, and what was written for them: the records of
    /// one call share their arguments, and share the omitted copy in turn.
    last: Mutex<Option<(SharedValue, SharedValue)>>,
}

impl ValuesSink {
    /// `sink` behind `values`, digests under `key`'s server key.
    pub(in crate::run) fn new(sink: Arc<dyn AuditSink>, values: AuditValues, key: TokenStore) -> Self {
        ValuesSink { sink, values, key, last: Mutex::new(None) }
    }

    /// `record` as the setting keeps it.
    fn kept(&self, mut record: AuditRecord) -> AuditRecord {
        if self.values != AuditValues::Omitted {
            return record;
        }
        let Some(args) = record.args.take() else { return record };
        if values_omitted(args.as_value()) {
            record.args = Some(args);
            return record;
        }
        if let Some(reason) = &record.reason {
            record.reason = Some(omit_in_text(reason, args.as_value()));
        }
        record.args = Some(self.omitted(&args));
        record
    }

    /// The omitted copy of `args`, shared with the call's earlier records when it has some.
    fn omitted(&self, args: &SharedValue) -> SharedValue {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, written)) = last.as_ref()
            && seen.ptr_eq(args)
        {
            return written.clone();
        }
        let written = SharedValue::from(omit_args(args.as_value(), |text| self.key.value_mac(text)));
        *last = Some((args.clone(), written.clone()));
        written
    }
}

impl AuditSink for ValuesSink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        self.sink.append(self.kept(record))
    }

    fn holds_final<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, Result<Option<bool>, AuditError>> {
        self.sink.holds_final(call_id)
    }

    fn owed_finals(
        &self,
        older_than: std::time::Duration,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<AuditRecord>, AuditError>> {
        self.sink.owed_finals(older_than, limit)
    }

    fn claim_owed<'a>(
        &'a self,
        call_id: &'a str,
        run_id: &'a str,
        node: &'a str,
        lease: std::time::Duration,
    ) -> BoxFuture<'a, Result<bool, AuditError>> {
        self.sink.claim_owed(call_id, run_id, node, lease)
    }
}
