//! The service's own listener: the connection limits of the shared
//! [`listener`](agents_mcp::listener) of `agents-mcp`, the same as the MCP HTTP server's.

use crate::Service;
use crate::host::ServedAt;
use agents_mcp::listener::{ConnectionLimits, accept_loop};
use axum::Router;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// Why the service cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The connection limits cannot be served.
    #[error("invalid connection limits: {0}")]
    Limits(String),
    /// The listener has no local address.
    #[error("the listener has no local address: {0}")]
    Listener(#[source] std::io::Error),
}

/// A running server ([`Service::serve`]). Dropping it does not stop it; call
/// [`Server::shutdown`].
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: CancellationToken,
    join: JoinHandle<()>,
    live: TaskTracker,
    service: Service,
}

impl Server {
    /// The address it listens on (with the actual port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections and closes the open ones; the MCP endpoints' pending
    /// confirmations end as `shutdown` ([`Service::shutdown`]).
    pub fn shutdown(&self) {
        self.service.shutdown();
        self.stop.cancel();
    }

    /// Waits until the server stopped (after [`Server::shutdown`]) and its connections ended.
    pub async fn wait(self) {
        let _ = self.join.await;
        self.live.close();
        self.live.wait().await;
    }
}

impl Service {
    /// Serves `app` (this service's [`router`](Service::router), merged with the
    /// application's routes and the [console](crate::Console) if any) on `listener`, within
    /// `limits`: at most [`ConnectionLimits::max_connections`] connections at once (further
    /// clients wait in the listen queue), a request's headers within
    /// [`ConnectionLimits::header_read_timeout`], quiet connections closed after
    /// [`ConnectionLimits::keep_alive_timeout`] between requests and
    /// [`ConnectionLimits::idle_timeout`] during one (an event stream's keep-alive comments
    /// keep it going). Every default is safe for a server reachable by untrusted clients.
    ///
    /// Requests served here carry the bound address, so the default `Host` allowlist pins the
    /// bound port (see [`ServiceBuilder::allowed_hosts`](crate::ServiceBuilder::allowed_hosts)).
    /// Returns once listening; the server runs on the current tokio runtime until
    /// [`Server::shutdown`].
    ///
    /// ```no_run
    /// # async fn f(service: agents_service::Service) -> Result<(), Box<dyn std::error::Error>> {
    /// use agents_service::ConnectionLimits;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// let server = service.serve(listener, service.router(), ConnectionLimits::default())?;
    /// tokio::signal::ctrl_c().await?;
    /// server.shutdown();
    /// server.wait().await;
    /// # Ok(()) }
    /// ```
    pub fn serve(&self, listener: TcpListener, app: Router, limits: ConnectionLimits) -> Result<Server, ServeError> {
        limits.check(Some(self.shared.limits.sse_keep_alive)).map_err(ServeError::Limits)?;
        let addr = listener.local_addr().map_err(ServeError::Listener)?;
        let handle = move |req: hyper::Request<hyper::body::Incoming>| {
            let mut req = req.map(axum::body::Body::new);
            req.extensions_mut().insert(ServedAt(addr));
            let app = app.clone();
            async move {
                match app.oneshot(req).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
            }
        };
        let (stop, live) = (CancellationToken::new(), TaskTracker::new());
        let join = tokio::spawn(accept_loop(listener, limits, handle, stop.clone(), live.clone()));
        tracing::info!(%addr, "service listening");
        Ok(Server { addr, stop, join, live, service: self.clone() })
    }
}
