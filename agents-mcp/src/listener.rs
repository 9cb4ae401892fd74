//! An HTTP/1 listener with the limits a server reachable by untrusted clients needs: a cap on
//! connections served at once, a time limit for a request's headers, a limit on quiet
//! connections, and a back-off when `accept` fails. The MCP streamable HTTP server
//! ([`serve_http`](crate::serve_http)) and the service's `agents_service::serve` both
//! accept their connections here.
//!
//! What it bounds, against a client that opens connections and then sends slowly or nothing:
//!
//! - at most [`ConnectionLimits::max_connections`] connections are served at once; further
//!   clients wait in the kernel's listen queue (they are not accepted, so they hold no task and
//!   no memory of this process) until one ends;
//! - a request's headers must be complete within [`ConnectionLimits::header_read_timeout`]
//!   (hyper's timer), or the connection is closed; a client that sends them byte by byte is
//!   cut then;
//! - a connection with no byte either way for [`ConnectionLimits::keep_alive_timeout`] between
//!   requests, or [`ConnectionLimits::idle_timeout`] while a request is in progress (a quiet
//!   event stream included; its keep-alive comments count as bytes), is closed.

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Limits of the connections one listener serves. Every default is safe for a server
/// reachable by untrusted clients; raise them for known load.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// Connections served at once; further clients wait in the listen queue until one ends.
    /// Default 1024.
    pub max_connections: usize,
    /// Time a client has to send a request's complete headers; slower clients are cut off.
    /// Default 10 s.
    pub header_read_timeout: Duration,
    /// Time a connection may stay open between requests. Default 30 s.
    pub keep_alive_timeout: Duration,
    /// Time a connection with a request in progress may go without a byte either way. Must be
    /// longer than the keep-alive interval of any event stream served. Default 120 s.
    pub idle_timeout: Duration,
    /// First wait after `accept` fails (out of descriptors, ...); doubled on each failure in
    /// a row up to `accept_backoff_max`, reset by a success. Default 5 ms.
    pub accept_backoff_min: Duration,
    /// Longest wait after `accept` fails. Default 1 s.
    pub accept_backoff_max: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(10),
            keep_alive_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            accept_backoff_min: Duration::from_millis(5),
            accept_backoff_max: Duration::from_secs(1),
        }
    }
}

impl ConnectionLimits {
    /// Why these limits cannot be served, if they cannot: a zero count or duration, or a
    /// maximum back-off under the minimum. `stream_keep_alive` is the keep-alive interval of
    /// the event streams served (the idle timeout must exceed it, or quiet streams are cut).
    pub fn check(&self, stream_keep_alive: Option<Duration>) -> Result<(), String> {
        if self.max_connections == 0 {
            return Err("max_connections must be above zero".into());
        }
        for (name, d) in [
            ("header_read_timeout", self.header_read_timeout),
            ("keep_alive_timeout", self.keep_alive_timeout),
            ("idle_timeout", self.idle_timeout),
            ("accept_backoff_min", self.accept_backoff_min),
        ] {
            if d.is_zero() {
                return Err(format!("{name} must be above zero"));
            }
        }
        if self.accept_backoff_max < self.accept_backoff_min {
            return Err("accept_backoff_max must be at least accept_backoff_min".into());
        }
        if let Some(keep_alive) = stream_keep_alive
            && self.idle_timeout <= keep_alive
        {
            return Err(
                "idle_timeout must be longer than the event streams' keep-alive interval, or quiet event streams are cut"
                    .into(),
            );
        }
        Ok(())
    }
}

/// Serves the connections `listener` accepts until `stop` is cancelled, each request answered
/// by `handle`, within `limits` (see the module documentation). Every connection's task is
/// spawned on `connections`, so a caller can wait for them after `stop`, which also closes the
/// open connections (hyper's graceful shutdown: no new request is read).
///
/// `limits` are taken as they are: check them first ([`ConnectionLimits::check`]).
pub async fn accept_loop<H, F, B>(
    listener: TcpListener,
    limits: ConnectionLimits,
    handle: H,
    stop: CancellationToken,
    connections: TaskTracker,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<B>> + Send + 'static,
    B: HttpBody<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let mut backoff = limits.accept_backoff_min;
    loop {
        // A free slot first: at the limit, clients wait in the listen queue.
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = stop.cancelled() => break,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(x) => {
                backoff = limits.accept_backoff_min;
                x
            }
            Err(e) => {
                // Out of descriptors, or a connection reset before it was taken: wait rather
                // than spin, longer each time in a row.
                tracing::warn!(error = %e, wait_ms = backoff.as_millis() as u64, "accept failed; backing off");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = stop.cancelled() => break,
                }
                backoff = (backoff * 2).min(limits.accept_backoff_max);
                continue;
            }
        };
        let handle = handle.clone();
        let stop = stop.clone();
        let limits = limits.clone();
        connections.spawn(async move {
            let _permit = permit;
            let activity = Arc::new(Activity::new());
            let io = Watched { io: stream, activity: activity.clone() };
            let svc = {
                let activity = activity.clone();
                hyper::service::service_fn(move |req: Request<Incoming>| {
                    let in_flight = InFlight::begin(&activity);
                    let response = handle(req);
                    async move {
                        Ok::<_, Infallible>(response.await.map(|inner| InFlightBody { inner, _in_flight: in_flight }))
                    }
                })
            };
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .keep_alive(true)
                .serve_connection(TokioIo::new(io), svc);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
                    }
                }
                _ = activity.expired(limits.keep_alive_timeout, limits.idle_timeout) => {
                    tracing::debug!(%peer, "idle HTTP connection closed");
                }
                _ = stop.cancelled() => conn.as_mut().graceful_shutdown(),
            }
        });
    }
}

/// A connection's last activity and whether a request is in progress on it.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Activity { start: Instant::now(), last_ms: AtomicU64::new(0), in_flight: AtomicUsize::new(0) }
    }

    fn touch(&self) {
        self.last_ms.store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn quiet_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }

    /// Resolves when the connection has been quiet too long: `keep_alive` between requests,
    /// `idle` while one is in progress.
    async fn expired(&self, keep_alive: Duration, idle: Duration) {
        loop {
            let limit = if self.in_flight.load(Ordering::Relaxed) > 0 { idle } else { keep_alive };
            let quiet = self.quiet_for();
            if quiet >= limit {
                return;
            }
            tokio::time::sleep(limit - quiet).await;
        }
    }
}

/// A socket that notes every byte read or written in its connection's [`Activity`].
struct Watched<S> {
    io: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A request in progress on its connection, from its start until its response body is
/// dropped.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn begin(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(activity.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// A response body that keeps its request counted as in progress until it is dropped.
struct InFlightBody<B> {
    inner: B,
    _in_flight: InFlight,
}

impl<B: HttpBody + Unpin> HttpBody for InFlightBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked() {
        assert!(ConnectionLimits::default().check(Some(Duration::from_secs(15))).is_ok());
        let bad = ConnectionLimits { max_connections: 0, ..ConnectionLimits::default() };
        assert!(bad.check(None).is_err());
        let bad = ConnectionLimits { header_read_timeout: Duration::ZERO, ..ConnectionLimits::default() };
        assert!(bad.check(None).is_err());
        let quick = ConnectionLimits { idle_timeout: Duration::from_secs(10), ..ConnectionLimits::default() };
        assert!(quick.check(None).is_ok());
        assert!(
            quick.check(Some(Duration::from_secs(15))).is_err(),
            "an idle timeout under the stream keep-alive would cut quiet streams"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_expires_after_its_quiet_limit() {
        let a = Activity::new();
        let started = Instant::now();
        a.expired(Duration::from_secs(5), Duration::from_secs(60)).await;
        assert_eq!(started.elapsed().as_secs(), 5, "between requests: the keep-alive timeout");
        a.in_flight.fetch_add(1, Ordering::Relaxed);
        a.touch();
        let started = Instant::now();
        a.expired(Duration::from_secs(5), Duration::from_secs(60)).await;
        assert_eq!(started.elapsed().as_secs(), 60, "with a request in progress: the idle timeout");
    }
}
