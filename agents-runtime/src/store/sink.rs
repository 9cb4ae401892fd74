//! An audit sink on a store's audit stream, with group commit.

use super::{Store, StoreResult};
use crate::audit::{Appended, AuditError, AuditRecord, AuditSink};
use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use tokio::sync::{mpsc, oneshot};

/// The most records one commit of a [`StoreAuditSink`] carries.
pub const STORE_MAX_BATCH: usize = 512;

/// The most batches a [`StoreAuditSink`] has sent and not yet seen answered: the next batch
/// goes out while the one before is still committing.
pub const STORE_IN_FLIGHT: usize = 2;

type Reply = oneshot::Sender<Result<AuditRecord, AuditError>>;

/// An [`AuditSink`] that appends to one stream of a [`Store`]: every node of a service may
/// open one on the same stream, and the records of all of them form one chain (the store
/// seals them under the database's lock of the stream's head).
///
/// Concurrent appends of this process are committed together: one task takes every record
/// waiting (up to [`STORE_MAX_BATCH`]) and appends them in one transaction, so the cost of
/// a commit is shared by the producers that arrived during the previous one. Where the store
/// sends an append behind the one before without waiting for its answer
/// ([`Store::pipelines_audit`]: PostgreSQL, while no other node appends to the stream), the
/// next batch is sent while the one before is still committing (at most [`STORE_IN_FLIGHT`]
/// are out): the store seals each after the head the one before it leaves, in the order they
/// were sent (see [`Store::append_audit`]), and the batches are answered in that order. A
/// call's `proposed` record and its outcome are never in flight together: the outcome is
/// written once the `proposed` record is acknowledged. `append`
/// resolves once the batch's transaction committed. A failed transaction stores none of its
/// records (the database rolls it back), so the chain's head stays known and the next batch
/// continues it: unlike a file sink, nothing is poisoned. A transaction whose answer was lost
/// is read back by the store (`agents_store::PostgresStore`) before it answers.
///
/// The store keeps each `proposed` record's debt until the call's final record is appended
/// (SQLite beside the record, in its transaction; PostgreSQL derives the debts from the stored
/// records when they are read), and answers [`AuditSink::owed_finals`] and
/// [`AuditSink::claim_owed`] from them, so a final record whose write failed is written by a
/// resumption on any node.
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
            let mut in_flight = FuturesOrdered::new();
            let mut open = true;
            while open || !in_flight.is_empty() {
                // The oldest batch's answer first; new records when none is out, or fewer
                // than `STORE_IN_FLIGHT` and the store sends the next behind the last.
                let next = poll_fn(|cx| {
                    if let Poll::Ready(Some((result, replies))) = in_flight.poll_next_unpin(cx) {
                        return Poll::Ready(Next::Answered(result, replies));
                    }
                    let room =
                        in_flight.is_empty() || (in_flight.len() < STORE_IN_FLIGHT && store.pipelines_audit(&stream));
                    if open && room {
                        return receiver.poll_recv_many(cx, &mut batch, STORE_MAX_BATCH).map(Next::Received);
                    }
                    Poll::Pending
                })
                .await;
                match next {
                    Next::Answered(result, replies) => answer(result, replies),
                    Next::Received(0) => open = false,
                    Next::Received(_) => {
                        let (records, replies): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
                        let append = store.append_audit(&stream, records);
                        in_flight.push_back(async move { (append.await, replies) });
                    }
                }
            }
        });
        sink
    }
}

/// What the committing task does next.
enum Next {
    /// The oldest batch in flight was answered.
    Answered(StoreResult<Vec<AuditRecord>>, Vec<Reply>),
    /// This many records arrived (none: every sender is gone).
    Received(usize),
}

/// Answers the producers of a batch, in the order of its records.
fn answer(result: StoreResult<Vec<AuditRecord>>, replies: Vec<Reply>) {
    match result {
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
