//! The `Origin` allowlist: a browser page of another site cannot call the endpoint with the
//! credentials its user's browser holds.

use super::answers::{ResponseBody, plain};
use http::{HeaderMap, Response, StatusCode, header};

/// Browser origins allowed to call (`scheme://host[:port]`), compared without regard to case
/// or a trailing `/`.
#[derive(Debug, Clone, Default)]
pub struct Origins(Vec<String>);

fn normalize_origin(o: &str) -> String {
    o.trim().trim_end_matches('/').to_ascii_lowercase()
}

impl Origins {
    /// The allowlist of these origins.
    pub fn new<S: AsRef<str>>(allowed: impl IntoIterator<Item = S>) -> Self {
        Origins(allowed.into_iter().map(|o| normalize_origin(o.as_ref())).collect())
    }

    /// The 403 for a request whose `Origin` header is not on the list; `None` when it is, or
    /// when the request has no `Origin` header (it does not come from a browser page).
    pub fn refusal(&self, headers: &HeaderMap) -> Option<Response<ResponseBody>> {
        let origin = headers.get(header::ORIGIN)?;
        let origin = origin.to_str().map(normalize_origin).unwrap_or_default();
        if self.0.contains(&origin) {
            return None;
        }
        tracing::warn!(%origin, "MCP request from an origin not on the allowlist refused");
        Some(plain(StatusCode::FORBIDDEN, "forbidden: this Origin is not allowed"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(o) = origin {
            h.insert(header::ORIGIN, o.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_foreign_origin_is_refused_and_a_listed_one_or_none_passes() {
        let origins = Origins::new(["https://App.example/"]);
        assert!(origins.refusal(&headers(Some("https://app.example"))).is_none());
        assert!(origins.refusal(&headers(Some("https://app.example/"))).is_none());
        assert!(origins.refusal(&headers(None)).is_none(), "not from a browser page");
        let refused = origins.refusal(&headers(Some("https://evil.example"))).unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    }
}
