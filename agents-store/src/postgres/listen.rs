//! Decisions heard as they are committed, on every node.
//!
//! Every statement that decides a proposal (`decide`, `close_undecided`) notifies channel
//! [`DECISIONS_CHANNEL`] with the call id, in its own transaction: PostgreSQL delivers it when that
//! transaction commits, and never for one rolled back or a decision refused. A node's runtime
//! asks once ([`Store::watch_decisions`](crate::Store::watch_decisions)) and this store keeps one
//! connection outside its pool listening to the channel, for as long as the runtime keeps the
//! receiver: each notification becomes [`DecisionSignal::Decided`] with its payload as received
//! (the runtime reads the row it names; the notification itself decides nothing). A lost
//! connection is opened again after [`PostgresSettings::listen_retry`](super::PostgresSettings::listen_retry),
//! doubled after each failure up to [`MAX_RETRY`], and each time it listens again the runtime
//! is sent [`DecisionSignal::Missed`] (it looks up every call it has waiting), since
//! notifications sent meanwhile went to nobody.

use super::connection::{Listen, with_sources};
use agents_runtime::store::{DECISION_SIGNALS_HELD, DecisionSignal};
use futures::StreamExt;
use std::time::Duration;
use tokio::sync::mpsc::Sender;
use tokio_postgres::{AsyncMessage, NoTls};

/// The channel decisions are notified on.
pub const DECISIONS_CHANNEL: &str = "agents_decisions";

/// The statement that notifies [`DECISIONS_CHANNEL`] of each call id of a `decided` CTE (appended to
/// the conditional update that decides, so both are one statement and one transaction).
pub(super) const NOTIFY_DECIDED: &str = "SELECT pg_notify('agents_decisions', call_id) FROM decided";

/// The `application_name` of the listening connection (what `pg_stat_activity` shows).
pub const DECISIONS_LISTENER: &str = "agents-decisions";

/// The longest wait between two attempts to listen again.
pub(super) const MAX_RETRY: Duration = Duration::from_secs(30);

/// Starts a task that listens on [`DECISIONS_CHANNEL`] as `listen` says and sends what it
/// hears, until the receiver is dropped.
pub(super) fn watch(listen: &Listen) -> tokio::sync::mpsc::Receiver<DecisionSignal> {
    let (tx, rx) = tokio::sync::mpsc::channel(DECISION_SIGNALS_HELD);
    let mut config = listen.config.clone();
    config.application_name(DECISIONS_LISTENER);
    drop(tokio::spawn(keep_listening(config, listen.retry, tx)));
    rx
}

/// Listens, and listens again after each loss (waiting `first_retry`, doubled after each
/// attempt that did not get to listen), until `out`'s receiver is gone.
async fn keep_listening(config: tokio_postgres::Config, first_retry: Duration, out: Sender<DecisionSignal>) {
    let mut retry = first_retry;
    loop {
        let mut listened = false;
        let lost = tokio::select! {
            lost = listen_once(&config, &out, &mut listened) => lost,
            () = out.closed() => return,
        };
        let Err(e) = lost else { return };
        if listened {
            retry = first_retry;
        }
        tracing::warn!(error = %e, retry_ms = retry.as_millis(), "the connection hearing decisions was lost; listening again");
        tokio::select! {
            () = tokio::time::sleep(retry) => {}
            () = out.closed() => return,
        }
        retry = (retry * 2).min(MAX_RETRY);
    }
}

/// One connection: connects, listens, tells `out` that signals may have been missed, then
/// forwards each notification. `Ok` when `out`'s receiver is gone; `Err` when the connection
/// failed or was lost (`listened` says whether it got to listen first).
async fn listen_once(
    config: &tokio_postgres::Config,
    out: &Sender<DecisionSignal>,
    listened: &mut bool,
) -> Result<(), String> {
    let (client, mut connection) = config.connect(NoTls).await.map_err(|e| with_sources(&e))?;
    let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    {
        let statement = format!("LISTEN {DECISIONS_CHANNEL}");
        let listening = client.batch_execute(&statement);
        tokio::pin!(listening);
        loop {
            tokio::select! {
                answer = &mut listening => {
                    answer.map_err(|e| with_sources(&e))?;
                    break;
                }
                message = messages.next() => if !forward(message, out).await? {
                    return Ok(());
                },
            }
        }
    }
    *listened = true;
    // Decisions committed while nothing listened were heard by nobody.
    if out.send(DecisionSignal::Missed).await.is_err() {
        return Ok(());
    }
    loop {
        if !forward(messages.next().await, out).await? {
            return Ok(());
        }
    }
}

/// Sends a notification of [`DECISIONS_CHANNEL`] on: `Ok(false)` once `out`'s receiver is gone, `Err`
/// when the connection failed or ended.
async fn forward(
    message: Option<Result<AsyncMessage, tokio_postgres::Error>>,
    out: &Sender<DecisionSignal>,
) -> Result<bool, String> {
    match message {
        Some(Ok(AsyncMessage::Notification(n))) if n.channel() == DECISIONS_CHANNEL => {
            Ok(out.send(DecisionSignal::Decided(n.payload().to_owned())).await.is_ok())
        }
        Some(Ok(_)) => Ok(true),
        Some(Err(e)) => Err(with_sources(&e)),
        None => Err("the server closed the connection".to_owned()),
    }
}
