//! Streamable HTTP: `Origin` allowlist, bearer tokens mapped to principals, a body limit, in
//! front of rmcp's streamable HTTP service.

use super::{McpError, McpOptions, McpServer};
use crate::core::Principal;
use crate::run::Runtime;
use crate::tool::Registry;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The largest request body accepted by default (1 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// Options of the streamable HTTP transport.
#[derive(Clone)]
pub struct HttpOptions {
    /// Where to listen. Defaults to `127.0.0.1:0` (loopback, a free port).
    pub bind: SocketAddr,
    /// The path the MCP endpoint answers on (other paths get 404).
    pub path: String,
    /// Browser origins allowed to call (`scheme://host[:port]`). A request with an `Origin`
    /// header not on this list gets 403; a request without one passes this check.
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (DNS-rebinding protection). Defaults to the loopback names;
    /// add the public host name when binding elsewhere.
    pub allowed_hosts: Vec<String>,
    /// Bearer token → the principal it authenticates. A missing or unknown token gets 401.
    /// Tokens are checked here and removed from the request; they are never forwarded.
    pub bearer_tokens: HashMap<String, Principal>,
    /// Requests with a larger body get 413.
    pub max_body_bytes: usize,
    /// Options shared with stdio (the session id is ignored: every MCP session gets its own).
    pub mcp: McpOptions,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("bind", &self.bind)
            .field("path", &self.path)
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("bearer_tokens", &format_args!("<{} tokens>", self.bearer_tokens.len()))
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            path: "/mcp".to_owned(),
            allowed_origins: Vec::new(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            bearer_tokens: HashMap::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            mcp: McpOptions::default(),
        }
    }
}

/// A running HTTP server. Dropping it does not stop it; call [`HttpServer::shutdown`].
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    cancel: CancellationToken,
    join: JoinHandle<()>,
}

impl HttpServer {
    /// The address it listens on (with the actual port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections and ends open MCP sessions.
    pub fn shutdown(&self) {
        self.cancel.cancel();
    }

    /// Waits until the server stops (after [`HttpServer::shutdown`]).
    pub async fn wait(self) {
        let _ = self.join.await;
    }
}

type Body = BoxBody<Bytes, Infallible>;

struct Gate {
    path: String,
    allowed_origins: Vec<String>,
    tokens: Vec<(Vec<u8>, Principal)>,
    max_body_bytes: usize,
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// Compares in time independent of where the first difference is.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn normalize_origin(o: &str) -> String {
    o.trim().trim_end_matches('/').to_ascii_lowercase()
}

impl Gate {
    /// The checks before rmcp sees a request. `Err` is the response to send.
    fn admit<B>(&self, req: &mut Request<B>) -> Result<(), Box<Response<Body>>> {
        if req.uri().path() != self.path {
            return Err(Box::new(plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is elsewhere")));
        }
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let origin = origin.to_str().map(normalize_origin).unwrap_or_default();
            if !self.allowed_origins.iter().any(|o| normalize_origin(o) == origin) {
                tracing::warn!(%origin, "request from an origin not on the allowlist refused");
                return Err(Box::new(plain(StatusCode::FORBIDDEN, "forbidden: this Origin is not allowed")));
            }
        }
        let token = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(|t| t.trim().as_bytes().to_vec());
        // Never forwarded: rmcp, the handler and the tools do not see the token.
        req.headers_mut().remove(header::AUTHORIZATION);
        let principal = token.and_then(|t| {
            let mut found = None;
            for (known, p) in &self.tokens {
                if ct_eq(known, &t) && found.is_none() {
                    found = Some(p.clone());
                }
            }
            found
        });
        let Some(principal) = principal else {
            let mut r = plain(StatusCode::UNAUTHORIZED, "unauthorized: send a valid bearer token");
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return Err(Box::new(r));
        };
        let declared =
            req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err(Box::new(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload too large: the request body exceeds the server's limit",
            )));
        }
        req.extensions_mut().insert(principal);
        Ok(())
    }
}

/// Serves agent `A` over streamable HTTP. Returns once listening; the server runs on the
/// current tokio runtime until [`HttpServer::shutdown`].
pub async fn serve_http<A: Registry>(runtime: Runtime, options: HttpOptions) -> Result<HttpServer, McpError> {
    if options.bearer_tokens.is_empty() {
        return Err(McpError::Options(
            "no bearer tokens configured: every request would get 401; map at least one token to a principal".into(),
        ));
    }
    if options.bearer_tokens.keys().any(|t| t.trim().is_empty() || t.trim() != t) {
        return Err(McpError::Options(
            "a bearer token is empty or has surrounding whitespace; use non-empty tokens without spaces".into(),
        ));
    }
    if options.max_body_bytes == 0 {
        return Err(McpError::Options("max_body_bytes must be at least 1".into()));
    }
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|source| McpError::Bind { addr: options.bind, source })?;
    let addr = listener.local_addr().map_err(|source| McpError::Bind { addr: options.bind, source })?;
    let cancel = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(cancel.child_token());
    let mut mcp_options = options.mcp.clone();
    mcp_options.session_id = None;
    let rt = runtime.clone();
    let service: StreamableHttpService<McpServer<A>, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(McpServer::<A>::new(rt.clone(), None, mcp_options.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let gate = Arc::new(Gate {
        path: options.path.clone(),
        allowed_origins: options.allowed_origins.clone(),
        tokens: options.bearer_tokens.iter().map(|(t, p)| (t.as_bytes().to_vec(), p.clone())).collect(),
        max_body_bytes: options.max_body_bytes,
    });
    let stop = cancel.clone();
    let join = tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = stop.cancelled() => break,
            };
            let (stream, peer) = match accepted {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            };
            let service = service.clone();
            let gate = gate.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
                    let service = service.clone();
                    let gate = gate.clone();
                    async move {
                        if let Err(resp) = gate.admit(&mut req) {
                            return Ok::<_, Infallible>(*resp);
                        }
                        Ok(service.handle(req).await)
                    }
                });
                let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
                tokio::pin!(conn);
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
                        }
                    }
                    _ = stop.cancelled() => conn.as_mut().graceful_shutdown(),
                }
            });
        }
    });
    tracing::info!(%addr, "MCP streamable HTTP server listening");
    Ok(HttpServer { addr, cancel, join })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate {
            path: "/mcp".into(),
            allowed_origins: vec!["https://app.example".into()],
            tokens: vec![(b"t0k3n".to_vec(), Principal::new("u1", "o1", "r"))],
            max_body_bytes: 10,
        }
    }

    fn request(headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().method("POST").uri("/mcp");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn admitted_requests_carry_the_principal_and_no_token() {
        let mut req = request(&[("authorization", "Bearer t0k3n"), ("origin", "https://app.example/")]);
        gate().admit(&mut req).unwrap();
        assert!(req.headers().get(header::AUTHORIZATION).is_none(), "the token is not forwarded");
        assert_eq!(req.extensions().get::<Principal>().unwrap().user_id, "u1");
    }

    #[test]
    fn refusals() {
        let status = |h: &[(&str, &str)]| gate().admit(&mut request(h)).unwrap_err().status();
        assert_eq!(
            status(&[("authorization", "Bearer t0k3n"), ("origin", "https://evil.example")]),
            StatusCode::FORBIDDEN
        );
        assert_eq!(status(&[]), StatusCode::UNAUTHORIZED);
        assert_eq!(status(&[("authorization", "Bearer t0k3")]), StatusCode::UNAUTHORIZED);
        assert_eq!(
            status(&[("authorization", "Bearer t0k3n"), ("content-length", "11")]),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        let mut other_path = Request::builder().uri("/other").body(()).unwrap();
        assert_eq!(gate().admit(&mut other_path).unwrap_err().status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn constant_time_compare() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
    }
}
