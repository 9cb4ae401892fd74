//! Redaction: recursive through objects and arrays, driven by the argument type's schema
//! (`#[secret]` parameters and [`crate::Secret`] fields) and by a configurable key list.
//! Only the copy that is stored or shown is redacted; the handler receives the real value.

use crate::secret::SECRET_SCHEMA_KEY;
use serde_json::{Map, Value};

/// The mask that replaces a secret value.
pub const MASK: &str = "•••";

/// Keys redacted wherever they appear, compared case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactionKeys {
    keys: Vec<String>,
    /// Bit `n` is set when a key is `n` bytes long (bit 63: 63 bytes or more), so most keys
    /// of an argument object are told apart by their length alone.
    lengths: u64,
}

impl Default for RedactionKeys {
    /// `password`, `admin_password`, `api_key`, `secret`, `token`, `access_token`,
    /// `refresh_token`, `authorization`.
    fn default() -> Self {
        Self::new([
            "password",
            "admin_password",
            "api_key",
            "secret",
            "token",
            "access_token",
            "refresh_token",
            "authorization",
        ])
    }
}

impl RedactionKeys {
    /// A key list.
    pub fn new<I: IntoIterator<Item = S>, S: AsRef<str>>(keys: I) -> Self {
        keys.into_iter().fold(Self::none(), |list, k| list.with(k.as_ref()))
    }

    /// No keys (schema-driven redaction only).
    pub fn none() -> Self {
        RedactionKeys { keys: Vec::new(), lengths: 0 }
    }

    /// Adds a key.
    pub fn with(mut self, key: &str) -> Self {
        self.keys.push(key.to_ascii_lowercase());
        self.lengths |= length_bit(key);
        self
    }

    fn matches(&self, key: &str) -> bool {
        self.lengths & length_bit(key) != 0 && self.keys.iter().any(|k| k.eq_ignore_ascii_case(key))
    }
}

fn length_bit(key: &str) -> u64 {
    1 << key.len().min(63)
}

/// A redacted copy of `value`. `schema` is the argument type's JSON schema (with `$defs`);
/// any node it marks secret is masked, as is any value under a listed key, at any depth.
/// Redacting twice gives the same result as once.
///
/// ```
/// use agents_core::redact::{redact, RedactionKeys};
/// use serde_json::json;
/// let v = json!({"user": {"name": "ann", "password": "x"}, "list": [{"api_key": "k"}]});
/// let r = redact(&v, None, &RedactionKeys::default());
/// assert_eq!(r, json!({"user": {"name": "ann", "password": "•••"}, "list": [{"api_key": "•••"}]}));
/// ```
pub fn redact(value: &Value, schema: Option<&Value>, keys: &RedactionKeys) -> Value {
    let root = schema;
    walk(value, schema, root, keys, 0)
}

/// [`redact`] for a schema that lives for the whole program, such as a tool's cached input
/// schema: whether the schema marks anything secret is worked out once per schema and
/// remembered, and a schema that marks nothing is not consulted again (the key list still
/// applies). The result is always the same as [`redact`]'s.
///
/// ```
/// use agents_core::redact::{redact, redact_static, RedactionKeys};
/// use serde_json::{json, Value};
/// use std::sync::LazyLock;
/// static PLAIN: LazyLock<Value> = LazyLock::new(|| json!({"type": "object"}));
/// let v = json!({"name": "ann", "token": "t"});
/// let keys = RedactionKeys::default();
/// assert_eq!(redact_static(&v, &PLAIN, &keys), redact(&v, Some(&PLAIN), &keys));
/// ```
pub fn redact_static(value: &Value, schema: &'static Value, keys: &RedactionKeys) -> Value {
    SecretSchema { schema, marks_secrets: marks_secrets(schema) }.redact(value, keys)
}

/// A schema together with whether it marks any node secret, worked out once when it is made:
/// for a caller that redacts many values against one schema and keeps the schema's facts
/// itself (the runtime keeps one per tool for a run). Its results are always [`redact`]'s.
///
/// ```
/// use agents_core::redact::{redact, RedactionKeys, SecretSchema};
/// use serde_json::json;
/// let schema = json!({"properties": {"pin": {"type": "string", "x-agents-secret": true}}});
/// let prepared = SecretSchema::new(&schema);
/// assert!(prepared.marks_secrets());
/// let keys = RedactionKeys::default();
/// let v = json!({"pin": "1234", "name": "ann"});
/// assert_eq!(prepared.redact(&v, &keys), redact(&v, Some(&schema), &keys));
/// assert_eq!(prepared.redact_owned(v.clone(), &keys), redact(&v, Some(&schema), &keys));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SecretSchema<'a> {
    schema: &'a Value,
    marks_secrets: bool,
}

impl<'a> SecretSchema<'a> {
    /// Reads the whole schema once to learn whether it marks anything secret.
    pub fn new(schema: &'a Value) -> Self {
        SecretSchema { schema, marks_secrets: mentions(schema, SECRET_SCHEMA_KEY) }
    }

    /// Whether any node of the schema is marked secret.
    pub fn marks_secrets(&self) -> bool {
        self.marks_secrets
    }

    /// [`redact`] with this schema; a schema that marks nothing is not consulted (the key list
    /// still applies).
    pub fn redact(&self, value: &Value, keys: &RedactionKeys) -> Value {
        if self.marks_secrets { redact(value, Some(self.schema), keys) } else { walk(value, None, None, keys, 0) }
    }

    /// [`SecretSchema::redact`] taking the value: returned as it is, with no copy, when
    /// nothing in it is to be masked.
    pub fn redact_owned(&self, value: Value, keys: &RedactionKeys) -> Value {
        if self.marks_secrets {
            redact(&value, Some(self.schema), keys)
        } else if untouched_by_keys(&value, keys, 0) {
            value
        } else {
            walk(&value, None, None, keys, 0)
        }
    }
}

/// Whether [`walk`] without a schema would return `value` unchanged: no listed key anywhere
/// and nothing nested deeper than it masks.
fn untouched_by_keys(value: &Value, keys: &RedactionKeys, depth: usize) -> bool {
    if depth > MAX_WALK_DEPTH {
        return false;
    }
    match value {
        Value::Object(map) => map.iter().all(|(k, v)| !keys.matches(k) && untouched_by_keys(v, keys, depth + 1)),
        Value::Array(items) => items.iter().all(|v| untouched_by_keys(v, keys, depth + 1)),
        _ => true,
    }
}

/// Below this depth [`walk`] masks whatever it finds.
const MAX_WALK_DEPTH: usize = 128;

/// Whether the schema marks any node secret, remembered per schema address.
fn marks_secrets(schema: &'static Value) -> bool {
    use std::collections::HashMap;
    use std::sync::{PoisonError, RwLock};
    static MEMO: RwLock<Option<HashMap<usize, bool>>> = RwLock::new(None);
    let address = std::ptr::from_ref(schema) as usize;
    if let Some(known) = MEMO.read().unwrap_or_else(PoisonError::into_inner).as_ref().and_then(|m| m.get(&address)) {
        return *known;
    }
    let marks = mentions(schema, SECRET_SCHEMA_KEY);
    MEMO.write().unwrap_or_else(PoisonError::into_inner).get_or_insert_with(HashMap::new).insert(address, marks);
    marks
}

/// Whether `key` is a key anywhere in the value.
fn mentions(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(map) => map.contains_key(key) || map.values().any(|v| mentions(v, key)),
        Value::Array(items) => items.iter().any(|v| mentions(v, key)),
        _ => false,
    }
}

const MAX_REF_DEPTH: usize = 64;

fn resolve<'a>(schema: Option<&'a Value>, root: Option<&'a Value>, depth: usize) -> Option<&'a Value> {
    let s = schema?;
    if depth > MAX_REF_DEPTH {
        return None;
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let target = r.strip_prefix("#/").and_then(|path| path.split('/').try_fold(root?, |node, seg| node.get(seg)));
        return resolve(target, root, depth + 1).or(Some(s));
    }
    Some(s)
}

fn is_secret(schema: Option<&Value>, root: Option<&Value>, depth: usize) -> bool {
    let Some(s) = schema else { return false };
    if s.get(SECRET_SCHEMA_KEY).and_then(Value::as_bool) == Some(true) {
        return true;
    }
    if depth > MAX_REF_DEPTH {
        return false;
    }
    if let Some(r) = resolve(Some(s), root, depth)
        && !std::ptr::eq(r, s)
    {
        return is_secret(Some(r), root, depth + 1);
    }
    // `Option<Secret<T>>` and friends: secret when any branch is.
    ["anyOf", "oneOf", "allOf"].iter().any(|k| {
        s.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(|b| is_secret(Some(b), root, depth + 1)))
    })
}

fn property_schema<'a>(schema: Option<&'a Value>, root: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    let s = resolve(schema, root, 0)?;
    if let Some(p) = s.get("properties").and_then(|p| p.get(key)) {
        return Some(p);
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(branches) = s.get(k).and_then(Value::as_array) {
            for b in branches {
                if let Some(p) = property_schema(Some(b), root, key) {
                    return Some(p);
                }
            }
        }
    }
    match s.get("additionalProperties") {
        Some(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

fn item_schema<'a>(schema: Option<&'a Value>, root: Option<&'a Value>) -> Option<&'a Value> {
    let s = resolve(schema, root, 0)?;
    if let Some(i) = s.get("items") {
        return Some(i);
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(branches) = s.get(k).and_then(Value::as_array) {
            for b in branches {
                if let Some(i) = item_schema(Some(b), root) {
                    return Some(i);
                }
            }
        }
    }
    None
}

fn walk(value: &Value, schema: Option<&Value>, root: Option<&Value>, keys: &RedactionKeys, depth: usize) -> Value {
    if is_secret(schema, root, 0) {
        return Value::String(MASK.to_owned());
    }
    if depth > MAX_WALK_DEPTH {
        return Value::String(MASK.to_owned());
    }
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let redacted = if keys.matches(k) {
                    Value::String(MASK.to_owned())
                } else {
                    walk(v, property_schema(schema, root, k), root, keys, depth + 1)
                };
                out.insert(k.clone(), redacted);
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let item = item_schema(schema, root);
            Value::Array(items.iter().map(|v| walk(v, item, root, keys, depth + 1)).collect())
        }
        other => other.clone(),
    }
}
