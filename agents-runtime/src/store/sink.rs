//! An audit sink on a store's audit stream, with group commit.

use super::Store;
use crate::audit::{Appended, AuditError, AuditRecord, AuditSink};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// The most records one commit of a [`StoreAuditSink`] carries.
pub const STORE_MAX_BATCH: usize = 512;

type Reply = oneshot::Sender<Result<AuditRecord, AuditError>>;

/// An [`AuditSink`] that appends to one stream of a [`Store`]: every node of a service may
/// open one on the same stream, and the records of all of them form one chain (the store
/// seals them under the database's lock of the stream's head).
///
/// Concurrent appends of this process are committed together: one task takes every record
/// waiting (up to [`STORE_MAX_BATCH`]) and appends them in one transaction, so the cost of
/// a commit is shared by the producers that arrived during the previous one. `append`
/// resolves once the batch's transaction committed. A failed transaction stores none of its
/// records (the database rolls it back), so the chain's head stays known and the next batch
/// continues it: unlike a file sink, nothing is poisoned. A transaction whose answer was lost
/// is read back by the store (`agents_store::PostgresStore`) before it answers.
///
/// The store keeps each `proposed` record's debt beside it until the call's final record is
/// appended ([`AuditSink::owed_finals`], [`AuditSink::claim_owed`]), so a final record whose
/// write failed is written by a resumption on any node.
#[derive(Clone)]
pub struct StoreAuditSink {
    sender: mpsc::UnboundedSender<(AuditRecord, Reply)>,
    store: Arc<dyn Store>,
    stream: String,
}

impl std::fmt::Debug for StoreAuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreAuditSink").field("stream", &self.stream).finish_non_exhaustive()
    }
}

impl StoreAuditSink {
    /// Starts the committing task on the current tokio runtime.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn new(store: Arc<dyn Store>, stream: impl Into<String>) -> Self {
        let stream = stream.into();
        let (sender, mut receiver) = mpsc::unbounded_channel::<(AuditRecord, Reply)>();
        let sink = StoreAuditSink { sender, store: store.clone(), stream: stream.clone() };
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(STORE_MAX_BATCH);
            while receiver.recv_many(&mut batch, STORE_MAX_BATCH).await > 0 {
                let (records, replies): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
                match store.append_audit(&stream, records).await {
                    Ok(sealed) => {
                        for (record, reply) in sealed.into_iter().zip(replies) {
                            let _ = reply.send(Ok(record));
                        }
                    }
                    Err(e) => {
                        let text = e.to_string();
                        for reply in replies {
                            let _ = reply.send(Err(AuditError::Refused(text.clone())));
                        }
                    }
                }
            }
        });
        sink
    }
}

impl AuditSink for StoreAuditSink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        let (reply, answer) = oneshot::channel();
        if self.sender.send((record, reply)).is_err() {
            return Appended::ready(Err(AuditError::Refused("the audit store's writer stopped".to_owned())));
        }
        Appended::pending(async move {
            answer.await.unwrap_or_else(|_| Err(AuditError::Refused("the audit store's writer stopped".to_owned())))
        })
    }

    fn holds_final<'a>(&'a self, call_id: &'a str) -> crate::BoxFuture<'a, Result<Option<bool>, AuditError>> {
        Box::pin(async move {
            self.store.holds_final(&self.stream, call_id).await.map_err(|e| AuditError::Refused(e.to_string()))
        })
    }

    fn owed_finals(
        &self,
        older_than: std::time::Duration,
        limit: u32,
    ) -> crate::BoxFuture<'_, Result<Vec<AuditRecord>, AuditError>> {
        Box::pin(async move {
            self.store
                .owed_finals(&self.stream, older_than, limit)
                .await
                .map_err(|e| AuditError::Refused(e.to_string()))
        })
    }

    fn claim_owed<'a>(
        &'a self,
        call_id: &'a str,
        run_id: &'a str,
        node: &'a str,
        lease: std::time::Duration,
    ) -> crate::BoxFuture<'a, Result<bool, AuditError>> {
        Box::pin(async move {
            self.store
                .claim_owed(&self.stream, call_id, run_id, node, lease)
                .await
                .map_err(|e| AuditError::Refused(e.to_string()))
        })
    }
}
