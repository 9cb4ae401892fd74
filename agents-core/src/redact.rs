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

/// A redacted copy of `value`: the copy that is stored or shown; the caller keeps the real one.
///
/// `schema` is the JSON schema of the value's type, with its `$defs` (as `schemars` makes it
/// for a tool's arguments; [`crate::Secret`] and `#[secret]` mark a node with
/// `"x-agents-secret": true`). Each position of the value (the root, a property of an object,
/// an element of an array) is matched against the *set* of schema nodes that may describe it:
/// every branch of every `anyOf`, `oneOf` and `allOf`, with local `$ref`s (`#/...`) resolved.
/// Then, for a position:
///
/// - **Marked secret**: when *any* candidate carries the mark, the whole value there (object,
///   array, scalar or `null` alike) is replaced by [`MASK`], whichever branch the value
///   actually matches.
/// - **Object property**: its candidates are, from every candidate of the object, the
///   `properties` entry of that name, *every* `patternProperties` schema (patterns are not
///   evaluated, which can only mask more), and `additionalProperties` when that node does not
///   name the key. Renamed fields (`#[serde(rename)]`, `rename_all`), tags and flattened
///   fields are found this way, because `schemars` writes them into the schema.
/// - **Array element**: by index through `prefixItems` (or the older array form of `items`),
///   then `items` (or `additionalItems`) for the rest, so tuples and tuple structs are followed.
/// - **Conservative rule**: a property or element for which no candidate gives a schema (a key
///   given under a `#[serde(alias)]`, which schemas do not list, or any key the schema does
///   not name, or a tuple element beyond the described ones; a `false` schema gives none, a
///   `true` schema, any value, does) is masked whole when the schema of the object or array
///   that holds it can reach a secret mark anywhere beneath it (through any keyword or `$ref`).
///   Where the schema holds no secret, such a value is kept.
/// - **Key list**: the value under any object key that `keys` names is masked, at any depth,
///   with or without a schema.
/// - **Depth**: anything nested deeper than 128 levels is masked; so is, when the schema marks
///   anything secret, a position whose `$ref`/`anyOf`/`oneOf`/`allOf` chain nests deeper
///   than 64 (a schema that marks nothing never masks more than no schema).
///
/// What is not masked: a value the schema does not mark, under a key the schema names and the
/// list does not; everything when `schema` is `None` and no key matches. Secrets that appear in
/// *other* texts (error messages and the like) are out of reach here. Redacting twice gives the
/// same result as once. These rules hold against whoever reads the redacted copy (records,
/// events, confirmation cards), whatever the value is, whether or not it would deserialize
/// into the schema's type.
///
/// ```
/// use agents_core::redact::{redact, RedactionKeys};
/// use serde_json::json;
/// let v = json!({"user": {"name": "ann", "password": "x"}, "list": [{"api_key": "k"}]});
/// let r = redact(&v, None, &RedactionKeys::default());
/// assert_eq!(r, json!({"user": {"name": "ann", "password": "•••"}, "list": [{"api_key": "•••"}]}));
///
/// // Two branches name `value`, one marks it; `pass` is an alias the schema does not list.
/// let schema = json!({"anyOf": [
///     {"properties": {"value": {"type": "integer"}}},
///     {"properties": {"value": {"type": "string", "x-agents-secret": true}, "name": {}}},
/// ]});
/// let v = json!({"value": "s3cret", "name": "ann", "pass": "hunter2"});
/// let r = redact(&v, Some(&schema), &RedactionKeys::none());
/// assert_eq!(r, json!({"value": "•••", "name": "ann", "pass": "•••"}));
/// ```
pub fn redact(value: &Value, schema: Option<&Value>, keys: &RedactionKeys) -> Value {
    let root = schema;
    walk(value, &Candidates::of(schema, root), root, keys, 0)
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
        if self.marks_secrets {
            redact(value, Some(self.schema), keys)
        } else {
            walk(value, &Candidates::default(), None, keys, 0)
        }
    }

    /// [`SecretSchema::redact`] taking the value: returned as it is, with no copy, when
    /// nothing in it is to be masked.
    pub fn redact_owned(&self, value: Value, keys: &RedactionKeys) -> Value {
        if self.marks_secrets {
            redact(&value, Some(self.schema), keys)
        } else if untouched_by_keys(&value, keys, 0) {
            value
        } else {
            walk(&value, &Candidates::default(), None, keys, 0)
        }
    }
}

/// Whether [`walk`] without a schema would return `value` unchanged: no listed key anywhere
/// and nothing nested deeper than it masks.
fn untouched_by_keys(value: &Value, keys: &RedactionKeys, depth: usize) -> bool {
    if depth > MAX_WALK_DEPTH {
        return false;
    }
    // A scalar member or element is untouched unless it lies deeper than `walk` keeps: only
    // objects and arrays are walked into.
    let nested = |v: &Value| match v {
        Value::Object(_) | Value::Array(_) => untouched_by_keys(v, keys, depth + 1),
        _ => depth < MAX_WALK_DEPTH,
    };
    match value {
        Value::Object(map) => map.iter().all(|(k, v)| !keys.matches(k) && nested(v)),
        Value::Array(items) => items.iter().all(nested),
        _ => true,
    }
}

/// Below this depth [`walk`] masks whatever it finds.
const MAX_WALK_DEPTH: usize = 128;

/// How deep `$ref`s and `anyOf`/`oneOf`/`allOf` may nest when a position's candidate schemas
/// are gathered; a schema nested deeper makes the position count as secret.
const MAX_REF_DEPTH: usize = 64;

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

/// The schema nodes that may describe one position of the value: every branch of every
/// `anyOf`/`oneOf`/`allOf`, `$ref`s resolved against the root, each node once.
#[derive(Default)]
struct Candidates<'a> {
    nodes: Vec<&'a Value>,
    /// A branch nested deeper than [`MAX_REF_DEPTH`] was not followed.
    truncated: bool,
    /// Some schema other than `false` was given for the position, even if only `true` (any
    /// value) or one with no keyword that describes a part of it.
    described: bool,
}

impl<'a> Candidates<'a> {
    fn of(schemas: impl IntoIterator<Item = &'a Value>, root: Option<&'a Value>) -> Self {
        let mut out = Candidates::default();
        for s in schemas {
            out.described |= *s != Value::Bool(false);
            out.add(s, root, 0);
        }
        out
    }

    fn add(&mut self, schema: &'a Value, root: Option<&'a Value>, depth: usize) {
        // Boolean schemas (`true`: anything, `false`: nothing) describe no part of a value.
        if !schema.is_object() || self.nodes.iter().any(|n| std::ptr::eq(*n, schema)) {
            return;
        }
        if depth > MAX_REF_DEPTH {
            self.truncated = true;
            return;
        }
        self.nodes.push(schema);
        if let Some(target) = schema.get("$ref").and_then(Value::as_str).and_then(|r| resolve_ref(r, root)) {
            self.add(target, root, depth + 1);
        }
        for k in ["anyOf", "oneOf", "allOf"] {
            for branch in schema.get(k).and_then(Value::as_array).into_iter().flatten() {
                self.add(branch, root, depth + 1);
            }
        }
    }

    /// Whether any candidate marks the position secret (or the schema nests too deep to tell,
    /// and marks something secret somewhere).
    fn secret(&self, root: Option<&Value>) -> bool {
        (self.truncated && marks_anything(root))
            || self.nodes.iter().any(|n| n.get(SECRET_SCHEMA_KEY).and_then(Value::as_bool) == Some(true))
    }

    /// The candidates for the value under `key` of an object at this position.
    fn property(&self, key: &str, root: Option<&'a Value>) -> Self {
        let mut subs = Vec::new();
        for n in &self.nodes {
            let named = n.get("properties").and_then(|p| p.get(key));
            subs.extend(named);
            // Patterns are not evaluated: every `patternProperties` schema is taken to apply,
            // which can only mask more.
            let patterns = n.get("patternProperties").and_then(Value::as_object);
            subs.extend(patterns.into_iter().flat_map(|p| p.values()));
            if named.is_none()
                && let Some(extra) = n.get("additionalProperties")
            {
                subs.push(extra);
            }
        }
        Candidates::of(subs, root)
    }

    /// The candidates for the element at `index` of an array at this position: `prefixItems`
    /// (or the older array form of `items`) by index, then `items` (or `additionalItems`).
    fn item(&self, index: usize, root: Option<&'a Value>) -> Self {
        let mut subs = Vec::new();
        for n in &self.nodes {
            let items = n.get("items");
            match (n.get("prefixItems").and_then(Value::as_array), items) {
                (Some(prefix), _) if index < prefix.len() => subs.push(&prefix[index]),
                (Some(_), Some(rest)) => subs.push(rest),
                (None, Some(Value::Array(tuple))) if index < tuple.len() => subs.push(&tuple[index]),
                (None, Some(Value::Array(_))) => subs.extend(n.get("additionalItems")),
                (None, Some(each)) => subs.push(each),
                _ => {}
            }
        }
        Candidates::of(subs, root)
    }

    /// Whether a secret mark can be reached from any candidate, through any keyword and
    /// `$ref` (the definitions themselves are reached only through references).
    fn hold_secret(&self, root: Option<&Value>) -> bool {
        let mut seen = Vec::new();
        (self.truncated && marks_anything(root)) || self.nodes.iter().any(|n| holds_secret(n, root, &mut seen, 0))
    }
}

/// Whether the schema marks anything secret anywhere: the answer where it nests too deep to
/// follow, so that a schema without marks never masks more than no schema.
fn marks_anything(root: Option<&Value>) -> bool {
    root.is_some_and(|r| mentions(r, SECRET_SCHEMA_KEY))
}

fn resolve_ref<'a>(reference: &str, root: Option<&'a Value>) -> Option<&'a Value> {
    let path = reference.strip_prefix('#')?;
    if path.is_empty() {
        return root;
    }
    path.strip_prefix('/')?.split('/').try_fold(root?, |node, seg| {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        match node {
            Value::Array(items) => items.get(seg.parse::<usize>().ok()?),
            _ => node.get(seg.as_str()),
        }
    })
}

fn holds_secret<'a>(node: &'a Value, root: Option<&'a Value>, seen: &mut Vec<*const Value>, depth: usize) -> bool {
    if depth > MAX_WALK_DEPTH {
        return marks_anything(root);
    }
    match node {
        Value::Object(map) => {
            if map.get(SECRET_SCHEMA_KEY).and_then(Value::as_bool) == Some(true) {
                return true;
            }
            if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| resolve_ref(r, root)) {
                let address = std::ptr::from_ref(target);
                if !seen.contains(&address) {
                    seen.push(address);
                    if holds_secret(target, root, seen, depth + 1) {
                        return true;
                    }
                }
            }
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "$defs" | "definitions"))
                .any(|(_, v)| holds_secret(v, root, seen, depth + 1))
        }
        Value::Array(items) => items.iter().any(|v| holds_secret(v, root, seen, depth + 1)),
        _ => false,
    }
}

fn walk(value: &Value, schema: &Candidates<'_>, root: Option<&Value>, keys: &RedactionKeys, depth: usize) -> Value {
    if schema.secret(root) || depth > MAX_WALK_DEPTH {
        return Value::String(MASK.to_owned());
    }
    // Computed at most once per object or array, and only when a child has no schema.
    let mut holds = None;
    let mut unknown_child = |child: &Candidates<'_>| {
        !child.described && !schema.nodes.is_empty() && *holds.get_or_insert_with(|| schema.hold_secret(root))
    };
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let redacted = if keys.matches(k) {
                    Value::String(MASK.to_owned())
                } else {
                    let child = schema.property(k, root);
                    if unknown_child(&child) {
                        Value::String(MASK.to_owned())
                    } else {
                        walk(v, &child, root, keys, depth + 1)
                    }
                };
                out.insert(k.clone(), redacted);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let child = schema.item(i, root);
                    if unknown_child(&child) {
                        Value::String(MASK.to_owned())
                    } else {
                        walk(v, &child, root, keys, depth + 1)
                    }
                })
                .collect(),
        ),
        other => other.clone(),
    }
}
