//! A wrapper that marks a value as secret wherever it is nested.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// The JSON schema extension key that marks a value as secret.
pub const SECRET_SCHEMA_KEY: &str = "x-agents-secret";

/// A value that is masked in audit records, confirm cards and debug output, while the handler
/// still receives it. Use it for secrets nested inside argument structs; top-level parameters
/// can use `#[secret]` instead.
///
/// ```
/// use agents_core::Secret;
/// let s: Secret<String> = serde_json::from_str("\"hunter2\"").unwrap();
/// assert_eq!(s.expose(), "hunter2");
/// assert_eq!(format!("{s:?}"), "Secret(•••)");
/// ```
#[derive(Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a value.
    pub fn new(value: T) -> Self {
        Secret(value)
    }
    /// The real value.
    pub fn expose(&self) -> &T {
        &self.0
    }
    /// Unwraps the real value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(•••)")
    }
}

impl<T: JsonSchema> JsonSchema for Secret<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = T::json_schema(generator);
        schema.insert(SECRET_SCHEMA_KEY.to_owned(), serde_json::Value::Bool(true));
        schema
    }
}
