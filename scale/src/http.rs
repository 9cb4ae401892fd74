//! The benches' HTTP client: hyper's, keep-alive, plain loopback HTTP/1.1, with the
//! development authenticator's header naming the principal.

use agents_service::DEV_PRINCIPAL_HEADER;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client as Hyper;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::net::SocketAddr;

/// A keep-alive client: connections are reused across requests, as a browser's are.
#[derive(Clone)]
pub struct Client {
    inner: Hyper<HttpConnector, Full<Bytes>>,
}

impl Default for Client {
    fn default() -> Self {
        Self::new()
    }
}

/// A response: its status and its whole body as text.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The body, read to its end (an event stream's, until the server ends it).
    pub body: String,
}

impl Reply {
    /// The body as JSON. Panics, with the body, when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

impl Client {
    /// A client whose idle connections stay open for reuse.
    pub fn new() -> Self {
        let inner = Hyper::builder(TokioExecutor::new()).pool_max_idle_per_host(usize::MAX).build_http();
        Client { inner }
    }

    /// One request as `who` (`user/org/role` for the development authenticator; `None`: no
    /// such header), the body as JSON when given; the status and the whole body.
    pub async fn send(
        &self,
        base: SocketAddr,
        method: &str,
        path: &str,
        who: Option<&str>,
        body: Option<&str>,
    ) -> Reply {
        self.send_with(base, method, path, who, body, &[]).await
    }

    /// [`Client::send`] with more headers (`name`, `value`).
    pub async fn send_with(
        &self,
        base: SocketAddr,
        method: &str,
        path: &str,
        who: Option<&str>,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut req = hyper::Request::builder().method(method).uri(format!("http://{base}{path}"));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if let Some(who) = who {
            req = req.header(DEV_PRINCIPAL_HEADER, who);
        }
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let req = req.body(Full::new(Bytes::from(body.unwrap_or("").to_owned()))).expect("a well-formed request");
        let response = self.inner.request(req).await.unwrap_or_else(|e| panic!("{method} {path}: no response ({e:?})"));
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        Reply { status, body: String::from_utf8_lossy(&bytes).into_owned() }
    }

    /// `POST` of a JSON body as `who`.
    pub async fn post(&self, base: SocketAddr, path: &str, who: &str, body: &str) -> Reply {
        self.send(base, "POST", path, Some(who), Some(body)).await
    }

    /// `GET` as `who`.
    pub async fn get(&self, base: SocketAddr, path: &str, who: &str) -> Reply {
        self.send(base, "GET", path, Some(who), None).await
    }
}

/// The development authenticator's principal header value of the benches' user number `i`.
pub fn user(i: usize) -> String {
    format!("u{i}/{}/{}", crate::desk::ORG, crate::desk::ROLE)
}

/// A loopback listener on a free port, serving `router` with axum until the process ends;
/// its address.
pub async fn serve(router: agents_service::axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let addr = listener.local_addr().expect("the bound address");
    tokio::spawn(async move { agents_service::axum::serve(listener, router).await.expect("the server runs") });
    addr
}
