//! [`ApiKey`]: a provider's key, which never prints. Both the HTTP stack, which sends it, and
//! the [`Redactor`](crate::redact::Redactor), which keeps it out of every text built from an
//! answer, take it from here.

use std::fmt;

/// An API key. It never appears in `Debug` output, error messages or descriptions.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(****)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_debug_is_masked() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey(****)");
    }
}
