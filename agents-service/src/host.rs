//! The `Host` allowlist in front of every route (DNS-rebinding protection).
//!
//! A web page the operator visits can make the browser send requests to a name that resolves
//! to the service's address (DNS rebinding); the browser then sends that name in `Host`. So a
//! request is answered only when its `Host` (or, without one, the authority of its URI) is one
//! the service answers for; any other gets 403 `host_not_allowed` (a missing or malformed one
//! 400 `invalid_host`) before authentication, and nothing runs.
//!
//! Without [`ServiceBuilder::allowed_hosts`](crate::ServiceBuilder::allowed_hosts), the service
//! answers for the loopback names (`localhost`, `127.0.0.1`, `[::1]`) and the bound address,
//! on the bound port when the service's own listener ([`Service::serve`](crate::Service::serve))
//! serves it, on any port otherwise (it cannot know its port then). A configured list replaces
//! that default.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header, uri::Authority};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::Arc;

/// The address the service's own listener is bound to, on each request it serves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServedAt(pub(crate) SocketAddr);

/// One allowed authority: a host name or address (lowercase, IPv6 without brackets) and, when
/// given, the one port it is allowed on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    host: String,
    port: Option<u16>,
}

/// Nothing but a host and, if any, a port that is a number (no user info, no `name:junk`).
fn well_formed(a: &Authority) -> bool {
    let plain = match a.port_u16() {
        Some(port) => format!("{}:{port}", a.host()),
        None => a.host().to_owned(),
    };
    a.as_str().eq_ignore_ascii_case(&plain)
}

fn normalize(host: &str) -> String {
    host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()
}

impl Entry {
    fn parse(text: &str) -> Result<Entry, String> {
        let text = text.trim();
        let authority =
            Authority::try_from(text).ok().filter(|a| !text.is_empty() && well_formed(a)).ok_or_else(|| {
                format!("`{text}` is not a host: write `name`, `name:port`, `127.0.0.1:8080` or `[::1]:8080`")
            })?;
        Ok(Entry { host: normalize(authority.host()), port: authority.port_u16() })
    }

    fn allows(&self, host: &str, port: Option<u16>) -> bool {
        self.host == host && self.port.is_none_or(|p| port == Some(p))
    }
}

/// Which `Host` values the service answers for.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowedHosts {
    /// `None`: the default (loopback names and the bound address, on the bound port).
    configured: Option<Arc<Vec<Entry>>>,
}

/// A host the service cannot be told to answer for.
#[derive(Debug, thiserror::Error)]
#[error("invalid allowed host: {0}")]
pub struct InvalidHost(String);

impl AllowedHosts {
    pub(crate) fn configured<I, S>(hosts: I) -> Result<Self, InvalidHost>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let entries: Vec<Entry> =
            hosts.into_iter().map(|h| Entry::parse(h.as_ref())).collect::<Result<_, _>>().map_err(InvalidHost)?;
        if entries.is_empty() {
            return Err(InvalidHost(
                "the list is empty, so no request would be answered; name at least one host".into(),
            ));
        }
        Ok(AllowedHosts { configured: Some(Arc::new(entries)) })
    }

    /// Whether a request for `host` (normalized) and `port` is answered, served at `at`.
    fn allows(&self, host: &str, port: Option<u16>, at: Option<SocketAddr>) -> bool {
        if let Some(entries) = &self.configured {
            return entries.iter().any(|e| e.allows(host, port));
        }
        let bound = at.map(|a| normalize(&a.ip().to_string()));
        let named = ["localhost", "127.0.0.1", "::1"].contains(&host) || bound.as_deref() == Some(host);
        named && at.is_none_or(|a| port == Some(a.port()))
    }
}

/// The layer: refuses a request whose `Host` the service does not answer for.
pub(crate) async fn check_host(State(allowed): State<AllowedHosts>, req: Request, next: Next) -> Response {
    let authority = match req.headers().get(header::HOST) {
        Some(value) => value.to_str().ok().and_then(|v| Authority::try_from(v).ok()),
        None => req.uri().authority().cloned(),
    };
    let Some(authority) = authority.filter(well_formed) else {
        return ApiError::new(StatusCode::BAD_REQUEST, "invalid_host", "send a valid Host header naming this service")
            .into_response();
    };
    let at = req.extensions().get::<ServedAt>().map(|s| s.0);
    let host = normalize(authority.host());
    if !allowed.allows(&host, authority.port_u16(), at) {
        tracing::warn!(host = %authority, "request for a host this service does not answer for refused (DNS rebinding?)");
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            format!(
                "this service does not answer for the host `{authority}`; if that is its name, add it to the allowed hosts \
                 (ServiceBuilder::allowed_hosts, `--allow-host` of the serve example)"
            ),
        )
        .into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_loopback_and_the_bound_address_on_the_bound_port() {
        let d = AllowedHosts::default();
        let at: SocketAddr = "10.0.0.5:8080".parse().unwrap();
        for (host, port) in [("localhost", 8080), ("127.0.0.1", 8080), ("::1", 8080), ("10.0.0.5", 8080)] {
            assert!(d.allows(host, Some(port), Some(at)), "{host}:{port}");
        }
        assert!(!d.allows("localhost", Some(8081), Some(at)));
        assert!(!d.allows("localhost", None, Some(at)));
        assert!(!d.allows("evil.example", Some(8080), Some(at)));
        // Served by another server: loopback names on any port, nothing else.
        assert!(d.allows("localhost", Some(3000), None));
        assert!(!d.allows("evil.example", Some(3000), None));
    }

    #[test]
    fn a_configured_list_replaces_the_default() {
        let c = AllowedHosts::configured(["Agents.Example.com", "[::1]:9000"]).unwrap();
        assert!(c.allows("agents.example.com", Some(443), None));
        assert!(c.allows("::1", Some(9000), None));
        assert!(!c.allows("::1", Some(9001), None));
        assert!(!c.allows("localhost", Some(9000), None));
        for bad in ["", "a b", "user@host", "host:port"] {
            assert!(AllowedHosts::configured([bad]).is_err(), "{bad}");
        }
        assert!(AllowedHosts::configured(Vec::<String>::new()).is_err());
    }
}
