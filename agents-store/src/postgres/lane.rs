//! An audit stream's appends from one store, in the order they were called: each batch is
//! sealed after the head the batch before it leaves and sent on the same connection, behind
//! it, without waiting for its answer.

use deadpool_postgres::Object;
use std::sync::{Arc, Weak};
use tokio::sync::oneshot;

/// A stream head: the last record's `seq` and `hash`, and the stream's fence.
pub(super) type Head = (i64, String, i64);

/// One stream's appends from this store.
///
/// The head is a guess that the database checks: every batch is stored by one statement that
/// advances the head from exactly the one the batch was sealed after (under the head row's
/// lock, and only at the same fence), so a batch sent after one that failed, or after another
/// node appended, is refused and stores nothing, and is then sealed again after the head read
/// under its lock.
#[derive(Default)]
pub(super) struct Lane {
    /// The head the last batch sent leaves, as this store expects it; `None` until the head
    /// is read under its lock (at the first append, and again after a failure).
    pub(super) head: Option<Head>,
    /// The connection of the batches in flight: the next batch is sent on it, behind them, so
    /// the server runs them in the order they were sealed. Gone once none is in flight.
    client: Weak<Object>,
    /// Resolves once the last append called has sent its batch (or given up): the next
    /// append's turn.
    last: Option<oneshot::Receiver<()>>,
    /// How many appends from now wait for their answer before the next one is sent: after a
    /// batch was refused for its head (another node appends to the stream too), a batch
    /// sent behind it would only be refused as well.
    one_at_a_time: u32,
}

/// How many appends after a refused one go one at a time.
const ONE_AT_A_TIME_AFTER_REFUSAL: u32 = 64;

impl Lane {
    /// Takes the next turn: what to wait for before sealing (the turn of the append called
    /// before), and what to signal once this append's batch is sent.
    pub(super) fn turn(&mut self) -> (Option<oneshot::Receiver<()>>, oneshot::Sender<()>) {
        let (sent, next) = oneshot::channel();
        (self.last.replace(next), sent)
    }

    /// Whether the append whose turn it is may let the next one go before its answer; called
    /// once per append, in turn.
    pub(super) fn may_pipeline(&mut self) -> bool {
        let alone = self.one_at_a_time > 0;
        self.one_at_a_time = self.one_at_a_time.saturating_sub(1);
        !alone
    }

    /// Whether the next append would let the one after it go before its answer.
    pub(super) fn pipelines(&self) -> bool {
        self.head.is_some() && self.one_at_a_time == 0
    }

    /// The connection of the batches in flight, if one is.
    pub(super) fn client(&self) -> Option<Arc<Object>> {
        self.client.upgrade()
    }

    /// Sends the next batches on `client` while any batch sent on it is in flight.
    pub(super) fn keep_client(&mut self, client: &Arc<Object>) {
        self.client = Arc::downgrade(client);
    }

    /// Forgets the guessed head and the connection (after a failure): the next append reads
    /// the head under its lock, on a connection of its own.
    pub(super) fn reset(&mut self) {
        self.head = None;
        self.client = Weak::new();
    }

    /// After a batch was refused for its head: forgets it (see [`Lane::reset`]), and the
    /// next appends go one at a time.
    pub(super) fn refused(&mut self) {
        self.reset();
        self.one_at_a_time = ONE_AT_A_TIME_AFTER_REFUSAL;
    }
}
