//! Whether a new JSON Schema accepts no value an old one refused: the check behind the
//! classification of an agent's input schema (see [`crate::diff`]).
//!
//! Sound, not complete: [`admits_no_more`] returns `Ok` only when it has shown, keyword by
//! keyword, that every value the new schema accepts the old one accepts too. Anything it does
//! not understand (a keyword outside the set below, a `$ref` it cannot resolve, an old `oneOf`
//! whose branches it cannot show disjoint) counts as "may accept more", so a reviewer may see a
//! widening that is not one, never the reverse.
//!
//! Understood: `type` (with `integer` inside `number`), `enum`, `const`, `properties`,
//! `required`, `additionalProperties`, `items`, the numeric, length, item and property-count
//! bounds, `pattern`, `format` and `multipleOf` (compared for equality or strength),
//! `uniqueItems`, `anyOf`, `oneOf`, `allOf`, and local `$ref`s (`#/$defs/...`), recursive ones
//! included. Annotations (`title`, `description`, `default`, `examples`, ...) are ignored.

use serde_json::{Map, Value};
use std::collections::HashSet;

/// Keywords that only describe: they accept and refuse nothing.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$comment",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Keywords compared by [`Check::keywords`].
const UNDERSTOOD: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
];

/// Keywords that, added to a schema, may make it accept more (they exempt keys or items from
/// `additionalProperties` or `items`, or change how `$ref`s resolve).
const LOOSENING: &[&str] = &[
    "patternProperties",
    "prefixItems",
    "additionalItems",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "$recursiveRef",
];

/// `Ok` when every value `new` accepts, `old` accepts too (shown keyword by keyword); otherwise
/// the places where `new` may accept more, each a JSON pointer into `new` and what it accepts.
///
/// ```
/// use agents_core::reviewed::admits_no_more;
/// use serde_json::json;
/// let old = json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": false});
/// let stricter = json!({"type": "object", "properties": {"id": {"type": "integer", "minimum": 0}}, "required": ["id"], "additionalProperties": false});
/// assert!(admits_no_more(&old, &stricter).is_ok());
/// let wider = json!({"type": "object", "properties": {"id": {"type": "number"}}, "required": ["id"], "additionalProperties": false});
/// assert_eq!(admits_no_more(&old, &wider).unwrap_err(), ["/properties/id: type widened: accepts number"]);
/// ```
pub fn admits_no_more(old: &Value, new: &Value) -> Result<(), Vec<String>> {
    let same_defs = ["$defs", "definitions"].iter().all(|k| old.get(k) == new.get(k));
    let mut check = Check { old_root: old, new_root: new, same_defs, assumed: HashSet::new(), why: Vec::new() };
    if check.sub(S::whole(old), S::whole(new), "") { Ok(()) } else { Err(check.why) }
}

/// Whether two schemas accept exactly the same values, as far as [`admits_no_more`] shows
/// both ways.
pub fn same_values(a: &Value, b: &Value) -> bool {
    admits_no_more(a, b).is_ok() && admits_no_more(b, a).is_ok()
}

struct Check<'a> {
    old_root: &'a Value,
    new_root: &'a Value,
    /// Whether both documents hold the same definitions, so that two equal schemas mean the
    /// same wherever their `$ref`s point.
    same_defs: bool,
    /// Pairs being compared higher up: assumed to hold (values are finite, so a recursive
    /// type's comparison is decided by its non-recursive parts).
    assumed: HashSet<(usize, usize, u8, u8)>,
    why: Vec<String>,
}

const TRUE: &Value = &Value::Bool(true);

/// The combinators, each with the bit that marks it handled in [`S::done`].
const COMBINATORS: [(&str, u8); 3] = [("anyOf", 1), ("oneOf", 2), ("allOf", 4)];

/// A schema, with the combinators already handled higher up masked out.
#[derive(Clone, Copy)]
struct S<'a> {
    value: &'a Value,
    done: u8,
}

impl<'a> S<'a> {
    fn whole(value: &'a Value) -> Self {
        S { value, done: 0 }
    }

    fn map(self) -> Option<&'a Map<String, Value>> {
        self.value.as_object()
    }

    /// A keyword, unless it is a combinator already handled.
    fn get(self, key: &str) -> Option<&'a Value> {
        if COMBINATORS.iter().any(|(k, bit)| *k == key && self.done & bit != 0) {
            return None;
        }
        self.map()?.get(key)
    }

    fn without(self, key: &str) -> Self {
        let bit = COMBINATORS.iter().find(|(k, _)| *k == key).map_or(0, |(_, b)| *b);
        S { value: self.value, done: self.done | bit }
    }

    /// Whether a keyword other than `but` (and the annotations) asserts anything.
    fn asserts_besides(self, but: &str) -> bool {
        self.map()
            .is_some_and(|m| m.keys().any(|k| k != but && !ANNOTATIONS.contains(&k.as_str()) && self.get(k).is_some()))
    }
}

impl<'a> Check<'a> {
    fn fail(&mut self, at: &str, what: impl std::fmt::Display) -> bool {
        self.why.push(format!("{}: {what}", if at.is_empty() { "/" } else { at }));
        false
    }

    /// Whether `new` ⊆ `old`.
    fn sub(&mut self, old: S<'a>, new: S<'a>, at: &str) -> bool {
        let (Some(ov), Some(nv)) = (resolve(self.old_root, old), resolve(self.new_root, new)) else {
            return self.fail(at, "a `$ref` that is not a local `#/...` reference alone is not compared");
        };
        let (old, new) = (S { value: ov, ..old }, S { value: nv, ..new });
        let key = (std::ptr::from_ref(ov) as usize, std::ptr::from_ref(nv) as usize, old.done, new.done);
        if !self.assumed.insert(key) {
            return true;
        }
        let result = self.sub_resolved(old, new, at);
        self.assumed.remove(&key);
        result
    }

    fn sub_resolved(&mut self, old: S<'a>, new: S<'a>, at: &str) -> bool {
        if self.same_defs && old.done == 0 && new.done == 0 && stripped(old.value) == stripped(new.value) {
            return true;
        }
        match (old.value, new.value) {
            (_, Value::Bool(false)) => true,
            (Value::Bool(false), _) => self.fail(at, "accepts values where none were accepted"),
            (Value::Object(_), Value::Object(_)) | (Value::Bool(true), _) if !old.asserts_besides("") => true,
            (Value::Object(_), Value::Object(_)) => self.combinators(old, new, at),
            (Value::Object(_), Value::Bool(true)) => self.fail(at, "accepts any value"),
            _ => self.fail(at, "is not a JSON Schema"),
        }
    }

    /// `anyOf`, `oneOf` and `allOf` of either side, then the keywords.
    fn combinators(&mut self, o: S<'a>, n: S<'a>, at: &str) -> bool {
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = n.get(key).and_then(Value::as_array) {
                // new ⊆ ∪ branches: each branch inside old is enough.
                let mark = self.why.len();
                if branches.iter().enumerate().all(|(i, b)| self.sub(o, S::whole(b), &format!("{at}/{key}/{i}"))) {
                    return true;
                }
                if !n.asserts_besides(key) {
                    return false;
                }
                self.why.truncate(mark);
                return self.combinators(o, n.without(key), at);
            }
        }
        if let Some(parts) = n.get("allOf").and_then(Value::as_array) {
            // new ⊆ each part: one part inside old is enough.
            let mark = self.why.len();
            if parts.iter().enumerate().any(|(i, p)| self.sub(o, S::whole(p), &format!("{at}/allOf/{i}"))) {
                self.why.truncate(mark);
                return true;
            }
            self.why.truncate(mark);
            if !n.asserts_besides("allOf") {
                return self.fail(at, "no part of `allOf` is shown inside the old schema");
            }
            return self.combinators(o, n.without("allOf"), at);
        }
        if let Some(parts) = o.get("allOf").and_then(Value::as_array) {
            let all = parts.iter().all(|p| self.sub(S::whole(p), n, at));
            return all && self.combinators(o.without("allOf"), n, at);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = o.get(key).and_then(Value::as_array) {
                if key == "oneOf" && !self.pairwise_disjoint(branches) {
                    return self.fail(at, "the old `oneOf` has branches not shown disjoint, so it is not compared");
                }
                let mark = self.why.len();
                if !branches.iter().any(|b| self.sub(S::whole(b), n, at)) {
                    self.why.truncate(mark);
                    return self.fail(at, format!("accepts values no branch of the old `{key}` accepts"));
                }
                self.why.truncate(mark);
                return self.combinators(o.without(key), n, at);
            }
        }
        self.keywords(o, n, at)
    }

    fn pairwise_disjoint(&self, branches: &'a [Value]) -> bool {
        let resolved: Vec<Option<&Value>> = branches.iter().map(|b| resolve(self.old_root, S::whole(b))).collect();
        resolved
            .iter()
            .enumerate()
            .all(|(i, a)| resolved[i + 1..].iter().all(|b| matches!((a, b), (Some(a), Some(b)) if disjoint(a, b))))
    }

    /// The keywords of two schemas whose combinators are handled.
    fn keywords(&mut self, os: S<'a>, ns: S<'a>, at: &str) -> bool {
        let (Some(o), Some(n)) = (os.map(), ns.map()) else { return self.fail(at, "is not a JSON Schema") };
        let known =
            |k: &str| ANNOTATIONS.contains(&k) || UNDERSTOOD.contains(&k) || COMBINATORS.iter().any(|(c, _)| *c == k);
        if let Some(key) = o.keys().find(|k| !known(k)) {
            return self.fail(at, format!("keyword `{key}` is not compared"));
        }
        if let Some(key) = n.keys().find(|k| LOOSENING.contains(&k.as_str()) && o.get(k.as_str()) != n.get(k.as_str()))
        {
            return self.fail(at, format!("keyword `{key}` may accept more"));
        }
        let Some(types) = self.types(o, n, at) else { return false };
        let mut ok = self.values(o, n, at);
        if types.number {
            ok &= self.numbers(o, n, at);
        }
        if types.string {
            ok &= self.strings(o, n, at);
        }
        if types.array {
            ok &= self.arrays(o, n, at);
        }
        if types.object {
            ok &= self.objects(o, n, at);
        }
        ok
    }

    /// `type`: each type the new accepts, the old accepts. Returns the kinds of value the new
    /// schema may accept (the other keywords matter only for those).
    fn types(&mut self, o: &Map<String, Value>, n: &Map<String, Value>, at: &str) -> Option<Kinds> {
        let new = type_set(n.get("type"));
        let old = type_set(o.get("type"));
        match (&old, &new) {
            (Some(old), Some(new)) => {
                let wider: Vec<&str> = new
                    .iter()
                    .copied()
                    .filter(|t| !(old.contains(t) || (*t == "integer" && old.contains(&"number"))))
                    .collect();
                if !wider.is_empty() {
                    self.fail(at, format!("type widened: accepts {}", wider.join(", ")));
                    return None;
                }
            }
            (Some(old), None) => {
                self.fail(at, format!("type no longer restricted (it was {})", old.join(", ")));
                return None;
            }
            (None, _) => {}
        }
        Some(Kinds::of(new.as_deref()))
    }

    /// `enum` and `const`: the new admits only values the old listed.
    fn values(&mut self, o: &Map<String, Value>, n: &Map<String, Value>, at: &str) -> bool {
        let Some(old) = listed(o) else { return true };
        let Some(new) = listed(n) else {
            return self.fail(at, "no longer restricted to listed values");
        };
        let extra: Vec<String> = new.iter().filter(|v| !old.contains(v)).map(|v| v.to_string()).collect();
        extra.is_empty() || self.fail(at, format!("enum relaxed: accepts {}", extra.join(", ")))
    }

    fn numbers(&mut self, o: &Map<String, Value>, n: &Map<String, Value>, at: &str) -> bool {
        let num = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_f64);
        let mut ok = true;
        if let Some(a) = num(o, "minimum") {
            ok &= num(n, "minimum").is_some_and(|b| b >= a) || num(n, "exclusiveMinimum").is_some_and(|b| b >= a);
        }
        if let Some(a) = num(o, "exclusiveMinimum") {
            ok &= num(n, "exclusiveMinimum").is_some_and(|b| b >= a) || num(n, "minimum").is_some_and(|b| b > a);
        }
        if let Some(a) = num(o, "maximum") {
            ok &= num(n, "maximum").is_some_and(|b| b <= a) || num(n, "exclusiveMaximum").is_some_and(|b| b <= a);
        }
        if let Some(a) = num(o, "exclusiveMaximum") {
            ok &= num(n, "exclusiveMaximum").is_some_and(|b| b <= a) || num(n, "maximum").is_some_and(|b| b < a);
        }
        if !ok {
            return self.fail(at, "a numeric bound relaxed");
        }
        if let Some(a) = num(o, "multipleOf") {
            let divides = num(n, "multipleOf").is_some_and(|b| b == a || (b / a).fract() == 0.0 && b.abs() >= a.abs());
            if !divides {
                return self.fail(at, "`multipleOf` relaxed");
            }
        }
        true
    }

    fn strings(&mut self, o: &Map<String, Value>, n: &Map<String, Value>, at: &str) -> bool {
        let ok = min_holds(o, n, "minLength")
            && max_holds(o, n, "maxLength")
            && same(o, n, "pattern")
            && same(o, n, "format");
        ok || self.fail(at, "a string bound, pattern or format relaxed")
    }

    fn arrays(&mut self, o: &'a Map<String, Value>, n: &'a Map<String, Value>, at: &str) -> bool {
        let bounds = min_holds(o, n, "minItems")
            && max_holds(o, n, "maxItems")
            && (o.get("uniqueItems") != Some(&Value::Bool(true)) || n.get("uniqueItems") == Some(&Value::Bool(true)));
        if !bounds {
            return self.fail(at, "an item count bound or `uniqueItems` relaxed");
        }
        match (o.get("items"), n.get("items")) {
            (Some(oi), Some(ni)) if !ni.is_array() => self.sub(S::whole(oi), S::whole(ni), &format!("{at}/items")),
            (Some(oi), None) => self.sub(S::whole(oi), S::whole(TRUE), &format!("{at}/items")),
            (None, Some(ni)) if !ni.is_array() => true,
            (None, None) => true,
            _ => self.fail(at, "`items` as a list is not compared"),
        }
    }

    fn objects(&mut self, o: &'a Map<String, Value>, n: &'a Map<String, Value>, at: &str) -> bool {
        if !(min_holds(o, n, "minProperties") && max_holds(o, n, "maxProperties")) {
            return self.fail(at, "a property count bound relaxed");
        }
        let mut ok = true;
        let new_required = strings_of(n.get("required"));
        for r in strings_of(o.get("required")) {
            if !new_required.contains(&r) {
                ok = self.fail(&format!("{at}/required"), format!("`{r}` no longer required"));
            }
        }
        let (op, np) = (props(o), props(n));
        let (oa, na) = (o.get("additionalProperties").unwrap_or(TRUE), n.get("additionalProperties").unwrap_or(TRUE));
        for (k, ns) in np.into_iter().flatten() {
            let here = format!("{at}/properties/{}", escape_pointer(k));
            match op.and_then(|m| m.get(k)) {
                Some(os) => ok &= self.sub(S::whole(os), S::whole(ns), &here),
                None if oa == &Value::Bool(false) && ns != &Value::Bool(false) => {
                    ok = self.fail(&here, "a new property");
                }
                None => ok &= self.sub(S::whole(oa), S::whole(ns), &here),
            }
        }
        for (k, os) in op.into_iter().flatten().filter(|(k, _)| np.is_none_or(|m| !m.contains_key(*k))) {
            ok &= self.sub(S::whole(os), S::whole(na), &format!("{at}/properties/{}", escape_pointer(k)));
        }
        if !self.sub(S::whole(oa), S::whole(na), &format!("{at}/additionalProperties")) {
            ok = false;
        }
        ok
    }
}

/// Which kinds of value a schema with this `type` may accept.
struct Kinds {
    number: bool,
    string: bool,
    array: bool,
    object: bool,
}

impl Kinds {
    fn of(types: Option<&[&str]>) -> Kinds {
        let has = |t: &str| types.is_none_or(|ts| ts.contains(&t));
        Kinds {
            number: has("number") || has("integer"),
            string: has("string"),
            array: has("array"),
            object: has("object"),
        }
    }
}

/// Follows local `$ref`s (a `$ref` beside other assertions is not followed: `None`).
fn resolve<'a>(root: &'a Value, s: S<'a>) -> Option<&'a Value> {
    let mut v = s.value;
    for _ in 0..64 {
        let Some(r) = v.as_object().and_then(|m| m.get("$ref")) else { return Some(v) };
        let m = v.as_object()?;
        if m.keys().any(|k| k != "$ref" && !ANNOTATIONS.contains(&k.as_str())) {
            return None;
        }
        v = root.pointer(r.as_str()?.strip_prefix('#')?)?;
    }
    None
}

/// The schema without its annotations, for equality.
fn stripped(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect(),
        ),
        other => other.clone(),
    }
}

fn type_set(t: Option<&Value>) -> Option<Vec<&str>> {
    match t? {
        Value::String(s) => Some(vec![s.as_str()]),
        Value::Array(a) => Some(a.iter().filter_map(Value::as_str).collect()),
        _ => Some(Vec::new()),
    }
}

/// The values `enum` and `const` allow (both when both are given: those in both).
fn listed(m: &Map<String, Value>) -> Option<Vec<&Value>> {
    let e = m.get("enum").map(|e| e.as_array().map(|a| a.iter().collect::<Vec<_>>()).unwrap_or_default());
    match (m.get("const"), e) {
        (Some(c), Some(e)) => Some(if e.contains(&c) { vec![c] } else { Vec::new() }),
        (Some(c), None) => Some(vec![c]),
        (None, e) => e,
    }
}

fn min_holds(o: &Map<String, Value>, n: &Map<String, Value>, k: &str) -> bool {
    o.get(k).and_then(Value::as_u64).is_none_or(|a| n.get(k).and_then(Value::as_u64).is_some_and(|b| b >= a))
}

fn max_holds(o: &Map<String, Value>, n: &Map<String, Value>, k: &str) -> bool {
    o.get(k).and_then(Value::as_u64).is_none_or(|a| n.get(k).and_then(Value::as_u64).is_some_and(|b| b <= a))
}

fn same(o: &Map<String, Value>, n: &Map<String, Value>, k: &str) -> bool {
    o.get(k).is_none() || o.get(k) == n.get(k)
}

fn strings_of(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

fn props(m: &Map<String, Value>) -> Option<&Map<String, Value>> {
    m.get("properties").and_then(Value::as_object)
}

fn escape_pointer(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

/// Whether no value is accepted by both (shown by types, listed values, or objects that each
/// require a property the other forbids).
fn disjoint(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return false };
    if let (Some(ta), Some(tb)) = (type_set(a.get("type")), type_set(b.get("type"))) {
        let overlap = ta.iter().any(|x| {
            tb.iter().any(|y| x == y || (*x == "integer" && *y == "number") || (*x == "number" && *y == "integer"))
        });
        if !overlap {
            return true;
        }
    }
    if let (Some(la), Some(lb)) = (listed(a), listed(b))
        && !la.iter().any(|v| lb.contains(v))
    {
        return true;
    }
    let forbids = |m: &Map<String, Value>, key: &str| {
        m.get("additionalProperties") == Some(&Value::Bool(false)) && props(m).is_none_or(|p| !p.contains_key(key))
    };
    let only_objects = |m: &Map<String, Value>| type_set(m.get("type")).is_some_and(|t| t == ["object"]);
    only_objects(a)
        && only_objects(b)
        && (strings_of(a.get("required")).iter().any(|r| forbids(b, r))
            || strings_of(b.get("required")).iter().any(|r| forbids(a, r)))
}
