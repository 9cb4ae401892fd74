//! `cargo xtask api [--check]`: one line per public item of each published library crate,
//! committed in `api/<crate>.txt`, so that a change to the public API shows in review and
//! `--check` fails CI when one happens without its listing.
//!
//! The listing is rendered from rustdoc's JSON output (`--output-format json`, unstable: see
//! [`crate::checks::rustdoc_unstable`]), read as plain JSON rather than through the
//! `rustdoc-types` crate, whose types must match the toolchain's format version exactly; the
//! format version is the listing's first line, so a toolchain change that alters it shows as
//! a change of the listing. Lines: every public item by the path it is reachable at, with
//! functions' and methods' signatures, fields, variants, trait items and the traits each type
//! implements (auto traits included, blanket impls left out), sorted.

use crate::checks::rustdoc_unstable;
use crate::cmd::{self, cargo, run, timed};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// `cargo xtask api [--check]`.
pub(crate) fn run_api(args: Vec<String>) -> Result<(), String> {
    let check = match args.as_slice() {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err(format!("`api` takes only `--check`, got `{}`", args.join(" "))),
    };
    let ws = cmd::workspace()?;
    let dir = cmd::root().join("api");
    let mut changed = Vec::new();
    timed("api", || {
        for p in ws.packages.iter().filter(|p| p.published) {
            let Some(lib) = &p.lib else { continue };
            let mut command = cargo();
            command.args([
                "rustdoc",
                "--lib",
                "-p",
                &p.name,
                "--all-features",
                "--",
                "-Z",
                "unstable-options",
                "--output-format",
                "json",
            ]);
            rustdoc_unstable(&mut command)?;
            run(&mut command)?;
            let json_path = ws.target_dir.join("doc").join(format!("{lib}.json"));
            let text = std::fs::read_to_string(&json_path).map_err(|e| format!("{}: {e}", json_path.display()))?;
            let doc: Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", json_path.display()))?;
            let listing = listing(&doc);
            let file = dir.join(format!("{}.txt", p.name));
            if check {
                let committed = std::fs::read_to_string(&file).unwrap_or_default();
                if committed != listing {
                    eprintln!("{}", difference(&committed, &listing, &file));
                    changed.push(file);
                }
            } else {
                std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                std::fs::write(&file, &listing).map_err(|e| format!("{}: {e}", file.display()))?;
                eprintln!("xtask: wrote {}", file.display());
            }
        }
        Ok(())
    })?;
    if changed.is_empty() {
        return Ok(());
    }
    let files: Vec<String> = changed.iter().map(|f: &PathBuf| f.display().to_string()).collect();
    Err(format!(
        "the public API differs from {}. If the change is intended, run `cargo xtask api` and commit the listings with it \
         (and say what changed in CHANGELOG.md)",
        files.join(", ")
    ))
}

/// The lines only in `committed` (`-`) and only in `now` (`+`).
fn difference(committed: &str, now: &str, file: &std::path::Path) -> String {
    let old: BTreeSet<&str> = committed.lines().collect();
    let new: BTreeSet<&str> = now.lines().collect();
    let mut text = format!("--- {} (committed)\n+++ the public API now\n", file.display());
    for line in old.difference(&new) {
        text.push_str(&format!("-{line}\n"));
    }
    for line in new.difference(&old) {
        text.push_str(&format!("+{line}\n"));
    }
    text
}

/// The listing of one crate from its rustdoc JSON.
pub(crate) fn listing(doc: &Value) -> String {
    let mut lines = BTreeSet::new();
    let root = &doc["root"];
    let crate_name = doc["index"][key(root)]["name"].as_str().unwrap_or("crate").to_owned();
    let mut walk = Walk { doc, lines: &mut lines, seen: BTreeSet::new() };
    walk.item(root, &crate_name);
    let mut out = format!("# rustdoc JSON format {}\n", doc["format_version"]);
    for line in lines {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

struct Walk<'a> {
    doc: &'a Value,
    lines: &'a mut BTreeSet<String>,
    seen: BTreeSet<(String, String)>,
}

impl<'a> Walk<'a> {
    fn get(&self, id: &Value) -> Option<&'a Value> {
        let doc: &'a Value = self.doc;
        doc["index"].get(key(id)).filter(|item| item["crate_id"] == 0)
    }

    /// Lists the item `id` as reachable at `path`, and what it contains.
    fn item(&mut self, id: &Value, path: &str) {
        if !self.seen.insert((key(id), path.to_owned())) {
            return;
        }
        let Some(item) = self.get(id) else { return };
        let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next()) else {
            if let Some(kind) = item["inner"].as_str() {
                self.lines.insert(format!("pub {kind} {path}"));
            }
            return;
        };
        let doc = self.doc;
        let ty = |t: &Value| Type(doc).render(t);
        match kind.as_str() {
            "module" => {
                self.lines.insert(format!("pub mod {path}"));
                for child in inner["items"].as_array().into_iter().flatten() {
                    self.child(child, path);
                }
            }
            "use" => self.reexport(inner, path),
            "struct" | "union" => self.structure(kind, inner, path),
            "enum" => self.enumeration(inner, path),
            "function" => {
                let line = self.function(inner, path);
                self.lines.insert(format!("pub {line}"));
            }
            "trait" => self.trait_with_members(inner, path),
            "type_alias" => {
                let generics = self.generics(&inner["generics"]);
                self.lines.insert(format!("pub type {path}{}{} = {}", generics.0, generics.1, ty(&inner["type"])));
            }
            "constant" => {
                self.lines.insert(format!("pub const {path}: {}", ty(&inner["type"])));
            }
            "static" => {
                let m = if inner["is_mutable"] == true { "mut " } else { "" };
                self.lines.insert(format!("pub static {m}{path}: {}", ty(&inner["type"])));
            }
            "macro" => {
                self.lines.insert(format!("pub macro {path}!"));
            }
            "proc_macro" => {
                let kind = inner["kind"].as_str().unwrap_or("bang");
                self.lines.insert(format!("pub proc_macro({kind}) {path}"));
            }
            other => {
                self.lines.insert(format!("pub {other} {path}"));
            }
        }
    }

    /// A re-export: the item it names, at this path (a glob: its items, here).
    fn reexport(&mut self, inner: &'a Value, path: &str) {
        let target = &inner["id"];
        let name = inner["name"].as_str().unwrap_or_default();
        let parent = path.rsplit_once("::").map_or(path, |(p, _)| p);
        match self.get(target) {
            Some(t) if inner["is_glob"] == true => {
                for child in t["inner"]["module"]["items"].as_array().into_iter().flatten().cloned().collect::<Vec<_>>()
                {
                    self.child(&child, parent);
                }
            }
            Some(_) => self.item(target, &format!("{parent}::{name}")),
            None => {
                let glob = if inner["is_glob"] == true { "::*" } else { "" };
                self.lines.insert(format!(
                    "pub use {parent}::{name} = {}{glob}",
                    inner["source"].as_str().unwrap_or_default()
                ));
            }
        }
    }

    /// A struct or union (`kind`): its generics, its fields' types, its impls.
    fn structure(&mut self, kind: &str, inner: &'a Value, path: &str) {
        let doc = self.doc;
        let ty = |t: &Value| Type(doc).render(t);
        let generics = self.generics(&inner["generics"]);
        let shape = &inner["kind"];
        if let Some(fields) = shape["tuple"].as_array() {
            let fields: Vec<String> = fields
                .iter()
                .map(|f| self.get(f).map_or("_".to_owned(), |f| ty(&f["inner"]["struct_field"])))
                .collect();
            self.lines.insert(format!("pub {kind} {path}{}({}){}", generics.0, fields.join(", "), generics.1));
        } else {
            let unit = if shape == "unit" { ";" } else { "" };
            self.lines.insert(format!("pub {kind} {path}{}{}{unit}", generics.0, generics.1));
            let fields = shape["plain"]["fields"].as_array().or(inner["fields"].as_array());
            for f in fields.into_iter().flatten() {
                if let Some(field) = self.get(f) {
                    self.lines.insert(format!(
                        "pub {path}.{}: {}",
                        field["name"].as_str().unwrap_or("_"),
                        ty(&field["inner"]["struct_field"])
                    ));
                }
            }
        }
        self.impls(&inner["impls"], path);
    }

    /// An enum: its generics, each variant with its fields' types, its impls.
    fn enumeration(&mut self, inner: &'a Value, path: &str) {
        let doc = self.doc;
        let ty = |t: &Value| Type(doc).render(t);
        let generics = self.generics(&inner["generics"]);
        self.lines.insert(format!("pub enum {path}{}{}", generics.0, generics.1));
        for v in inner["variants"].as_array().into_iter().flatten() {
            let Some(variant) = self.get(v) else { continue };
            let name = variant["name"].as_str().unwrap_or("_");
            let shape = &variant["inner"]["variant"]["kind"];
            let field_type = |f: &Value| self.get(f).map_or("_".to_owned(), |f| ty(&f["inner"]["struct_field"]));
            let body = if let Some(fields) = shape["tuple"].as_array() {
                format!("({})", fields.iter().map(field_type).collect::<Vec<_>>().join(", "))
            } else if let Some(fields) = shape["struct"]["fields"].as_array() {
                let fields: Vec<String> = fields
                    .iter()
                    .filter_map(|f| self.get(f))
                    .map(|f| format!("{}: {}", f["name"].as_str().unwrap_or("_"), ty(&f["inner"]["struct_field"])))
                    .collect();
                format!(" {{ {} }}", fields.join(", "))
            } else {
                String::new()
            };
            self.lines.insert(format!("pub {path}::{name}{body}"));
        }
        self.impls(&inner["impls"], path);
    }

    /// A trait: its generics, bounds and safety, then each of its members.
    fn trait_with_members(&mut self, inner: &'a Value, path: &str) {
        let generics = self.generics(&inner["generics"]);
        let bounds = self.bounds(&inner["bounds"]);
        let bounds = if bounds.is_empty() { String::new() } else { format!(": {bounds}") };
        let unsafety = if inner["is_unsafe"] == true { "unsafe " } else { "" };
        self.lines.insert(format!("pub {unsafety}trait {path}{}{bounds}{}", generics.0, generics.1));
        for member in inner["items"].as_array().into_iter().flatten() {
            if let Some(line) = self.member(member, path) {
                self.lines.insert(line);
            }
        }
    }

    fn child(&mut self, child: &Value, parent: &str) {
        let Some(item) = self.get(child) else {
            // An item of another crate shown inline here (`#[doc(inline)] pub use`).
            let doc: &Value = self.doc;
            if let Some(name) = doc["index"][key(child)]["name"].as_str() {
                self.lines.insert(format!("pub use {parent}::{name} (inlined from another crate)"));
            }
            return;
        };
        let is_use = item["inner"].get("use").is_some();
        let name = item["name"].as_str().unwrap_or_default().to_owned();
        let path = if is_use {
            format!("{parent}::{}", item["inner"]["use"]["name"].as_str().unwrap_or_default())
        } else {
            format!("{parent}::{name}")
        };
        self.item(child, &path);
    }

    /// The impls of a type: a line per trait implemented, and its inherent methods and consts.
    fn impls(&mut self, impls: &Value, path: &str) {
        for id in impls.as_array().into_iter().flatten() {
            let Some(imp) = self.get(id) else { continue };
            let inner = &imp["inner"]["impl"];
            if !inner["blanket_impl"].is_null() {
                continue;
            }
            if inner["trait"].is_null() {
                for member in inner["items"].as_array().into_iter().flatten() {
                    if self.get(member).is_some_and(|m| m["visibility"] == "public")
                        && let Some(line) = self.member(member, path)
                    {
                        self.lines.insert(line);
                    }
                }
            } else {
                let generics = self.generics(&inner["generics"]);
                let not = if inner["is_negative"] == true { "!" } else { "" };
                let unsafety = if inner["is_unsafe"] == true { "unsafe " } else { "" };
                let trait_path = Type(self.doc).path(&inner["trait"]);
                let target = Type(self.doc).render(&inner["for"]);
                self.lines.insert(format!("{unsafety}impl{} {not}{trait_path} for {target}{}", generics.0, generics.1));
            }
        }
    }

    /// A method, associated const or associated type of a trait or an inherent impl.
    fn member(&self, id: &Value, owner: &str) -> Option<String> {
        let item = self.get(id)?;
        let name = item["name"].as_str().unwrap_or("_");
        let (kind, inner) = item["inner"].as_object()?.iter().next()?;
        let path = format!("{owner}::{name}");
        let ty = |t: &Value| Type(self.doc).render(t);
        Some(match kind.as_str() {
            "function" => format!("pub {}", self.function(inner, &path)),
            "assoc_const" => format!("pub const {path}: {}", ty(&inner["type"])),
            "assoc_type" => {
                let bounds = self.bounds(&inner["bounds"]);
                let bounds = if bounds.is_empty() { String::new() } else { format!(": {bounds}") };
                let default =
                    if inner["type"].is_null() { String::new() } else { format!(" = {}", ty(&inner["type"])) };
                format!("pub type {path}{bounds}{default}")
            }
            other => format!("pub {other} {path}"),
        })
    }

    fn function(&self, inner: &Value, path: &str) -> String {
        let header = &inner["header"];
        let mut quals = String::new();
        for (flag, word) in [("is_const", "const "), ("is_async", "async "), ("is_unsafe", "unsafe ")] {
            if header[flag] == true {
                quals.push_str(word);
            }
        }
        let generics = self.generics(&inner["generics"]);
        let sig = &inner["sig"];
        let inputs: Vec<String> = sig["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|pair| {
                let name = pair[0].as_str().unwrap_or("_");
                let t = Type(self.doc).render(&pair[1]);
                if name == "self" { self_form(&t) } else { format!("{name}: {t}") }
            })
            .collect();
        let output = if sig["output"].is_null() {
            String::new()
        } else {
            format!(" -> {}", Type(self.doc).render(&sig["output"]))
        };
        format!("{quals}fn {path}{}({}){output}{}", generics.0, inputs.join(", "), generics.1)
    }

    /// `(<params>, where-clause)`.
    fn generics(&self, generics: &Value) -> (String, String) {
        let t = Type(self.doc);
        let params: Vec<String> = generics["params"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["kind"]["type"]["is_synthetic"] != true)
            .map(|p| {
                let name = p["name"].as_str().unwrap_or("_");
                let kind = &p["kind"];
                if let Some(ty) = kind.get("type") {
                    let bounds = self.bounds(&ty["bounds"]);
                    if bounds.is_empty() { name.to_owned() } else { format!("{name}: {bounds}") }
                } else if let Some(c) = kind.get("const") {
                    format!("const {name}: {}", t.render(&c["type"]))
                } else {
                    let outlives: Vec<&str> = kind["lifetime"]["outlives"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    if outlives.is_empty() { name.to_owned() } else { format!("{name}: {}", outlives.join(" + ")) }
                }
            })
            .collect();
        let preds: Vec<String> = generics["where_predicates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| {
                if let Some(b) = w.get("bound_predicate") {
                    format!("{}: {}", t.render(&b["type"]), self.bounds(&b["bounds"]))
                } else if let Some(l) = w.get("lifetime_predicate") {
                    let outlives: Vec<&str> =
                        l["outlives"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                    format!("{}: {}", l["lifetime"].as_str().unwrap_or("'_"), outlives.join(" + "))
                } else {
                    w.to_string()
                }
            })
            .collect();
        let params = if params.is_empty() { String::new() } else { format!("<{}>", params.join(", ")) };
        let preds = if preds.is_empty() { String::new() } else { format!(" where {}", preds.join(", ")) };
        (params, preds)
    }

    fn bounds(&self, bounds: &Value) -> String {
        Type(self.doc).bounds(bounds)
    }
}

/// `self: &Self` as `&self`, and so on.
fn self_form(t: &str) -> String {
    match t {
        "Self" => "self".to_owned(),
        "&Self" => "&self".to_owned(),
        "&mut Self" => "&mut self".to_owned(),
        other => format!("self: {other}"),
    }
}

/// Renders rustdoc JSON types as Rust source.
#[derive(Clone, Copy)]
struct Type<'a>(&'a Value);

impl Type<'_> {
    fn render(self, t: &Value) -> String {
        let Some((kind, v)) = t.as_object().and_then(|o| o.iter().next()) else {
            return match t.as_str() {
                Some("infer") => "_".to_owned(),
                Some(other) => other.to_owned(),
                None => "_".to_owned(),
            };
        };
        match kind.as_str() {
            "resolved_path" => self.path(v),
            "generic" | "primitive" => v.as_str().unwrap_or("_").to_owned(),
            "tuple" => {
                let parts: Vec<String> = v.as_array().into_iter().flatten().map(|p| self.render(p)).collect();
                if parts.len() == 1 { format!("({},)", parts[0]) } else { format!("({})", parts.join(", ")) }
            }
            "slice" => format!("[{}]", self.render(v)),
            "array" => format!("[{}; {}]", self.render(&v["type"]), v["len"].as_str().unwrap_or("_")),
            "borrowed_ref" => {
                let lifetime = v["lifetime"].as_str().map(|l| format!("{l} ")).unwrap_or_default();
                let m = if v["is_mutable"] == true { "mut " } else { "" };
                format!("&{lifetime}{m}{}", self.render(&v["type"]))
            }
            "raw_pointer" => {
                let m = if v["is_mutable"] == true { "mut" } else { "const" };
                format!("*{m} {}", self.render(&v["type"]))
            }
            "impl_trait" => format!("impl {}", self.bounds(v)),
            "dyn_trait" => {
                let traits: Vec<String> =
                    v["traits"].as_array().into_iter().flatten().map(|p| self.path(&p["trait"])).collect();
                let lifetime = v["lifetime"].as_str().map(|l| format!(" + {l}")).unwrap_or_default();
                format!("dyn {}{lifetime}", traits.join(" + "))
            }
            "qualified_path" => {
                let name = v["name"].as_str().unwrap_or("_");
                let self_type = self.render(&v["self_type"]);
                if v["trait"].is_null() {
                    format!("{self_type}::{name}")
                } else {
                    format!("<{self_type} as {}>::{name}", self.path(&v["trait"]))
                }
            }
            "function_pointer" => {
                let sig = &v["sig"];
                let inputs: Vec<String> =
                    sig["inputs"].as_array().into_iter().flatten().map(|p| self.render(&p[1])).collect();
                let output = if sig["output"].is_null() {
                    String::new()
                } else {
                    format!(" -> {}", self.render(&sig["output"]))
                };
                format!("fn({}){output}", inputs.join(", "))
            }
            _ => v.to_string(),
        }
    }

    /// A path with its generic arguments: the full path of a local item, the written one otherwise.
    fn path(self, p: &Value) -> String {
        let written = p["path"].as_str().or(p["name"].as_str()).unwrap_or("_");
        let local = self.0["paths"].get(key(&p["id"])).filter(|s| s["crate_id"] == 0);
        let name = match local.and_then(|s| s["path"].as_array()) {
            Some(parts) => parts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("::"),
            None => written.to_owned(),
        };
        format!("{name}{}", self.args(&p["args"]))
    }

    fn args(self, args: &Value) -> String {
        if let Some(angle) = args.get("angle_bracketed") {
            let mut parts: Vec<String> = angle["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| {
                    if let Some(t) = a.get("type") {
                        self.render(t)
                    } else if let Some(l) = a.get("lifetime") {
                        l.as_str().unwrap_or("'_").to_owned()
                    } else if let Some(c) = a.get("const") {
                        c["expr"].as_str().unwrap_or("_").to_owned()
                    } else {
                        "_".to_owned()
                    }
                })
                .collect();
            for c in angle["constraints"].as_array().into_iter().flatten() {
                let name = c["name"].as_str().unwrap_or("_");
                let binding = &c["binding"];
                if let Some(eq) = binding.get("equality") {
                    let value = eq.get("type").map_or_else(|| eq.to_string(), |t| self.render(t));
                    parts.push(format!("{name} = {value}"));
                } else if let Some(b) = binding.get("constraint") {
                    parts.push(format!("{name}: {}", self.bounds(b)));
                }
            }
            if parts.is_empty() { String::new() } else { format!("<{}>", parts.join(", ")) }
        } else if let Some(paren) = args.get("parenthesized") {
            let inputs: Vec<String> =
                paren["inputs"].as_array().into_iter().flatten().map(|t| self.render(t)).collect();
            let output = if paren["output"].is_null() {
                String::new()
            } else {
                format!(" -> {}", self.render(&paren["output"]))
            };
            format!("({}){output}", inputs.join(", "))
        } else {
            String::new()
        }
    }

    fn bounds(self, bounds: &Value) -> String {
        let parts: Vec<String> = bounds
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| {
                if let Some(t) = b.get("trait_bound") {
                    let modifier = if t["modifier"] == "maybe" { "?" } else { "" };
                    format!("{modifier}{}", self.path(&t["trait"]))
                } else if let Some(l) = b.get("outlives") {
                    l.as_str().unwrap_or("'_").to_owned()
                } else if let Some(u) = b.get("use") {
                    format!(
                        "use<{}>",
                        u.as_array()
                            .into_iter()
                            .flatten()
                            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    b.to_string()
                }
            })
            .collect();
        parts.join(" + ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate `demo` with a public function, a struct with a public field and its `Clone`
    /// impl, and a re-export of a function from a private module, as rustdoc's JSON has them.
    fn demo() -> Value {
        serde_json::json!({
            "root": 0,
            "format_version": 57,
            "index": {
                "0": {"crate_id": 0, "name": "demo", "visibility": "public",
                      "inner": {"module": {"is_crate": true, "items": [1, 2, 5]}}},
                "1": {"crate_id": 0, "name": "grant", "visibility": "public",
                      "inner": {"function": {
                          "sig": {"inputs": [["name", {"borrowed_ref": {"lifetime": null, "is_mutable": false, "type": {"primitive": "str"}}}]],
                                  "output": {"resolved_path": {"path": "Option", "id": 99, "args": {"angle_bracketed": {"args": [{"type": {"resolved_path": {"path": "Token", "id": 2, "args": null}}}], "constraints": []}}}}},
                          "generics": {"params": [], "where_predicates": []},
                          "header": {"is_const": false, "is_unsafe": false, "is_async": true, "abi": "Rust"}}}},
                "2": {"crate_id": 0, "name": "Token", "visibility": "public",
                      "inner": {"struct": {"kind": {"plain": {"fields": [3], "has_stripped_fields": true}},
                                           "generics": {"params": [], "where_predicates": []}, "impls": [4]}}},
                "3": {"crate_id": 0, "name": "id", "visibility": "public", "inner": {"struct_field": {"primitive": "u64"}}},
                "4": {"crate_id": 0, "name": null, "visibility": "default",
                      "inner": {"impl": {"trait": {"path": "Clone", "id": 98, "args": null}, "for": {"resolved_path": {"path": "Token", "id": 2, "args": null}},
                                         "generics": {"params": [], "where_predicates": []}, "items": [], "blanket_impl": null, "is_negative": false, "is_unsafe": false}}},
                "5": {"crate_id": 0, "name": null, "visibility": "public",
                      "inner": {"use": {"source": "inner::revoke", "name": "revoke", "id": 6, "is_glob": false}}},
                "6": {"crate_id": 0, "name": "revoke", "visibility": "public",
                      "inner": {"function": {"sig": {"inputs": [], "output": null},
                                             "generics": {"params": [{"name": "T", "kind": {"type": {"bounds": [{"trait_bound": {"trait": {"path": "Send", "id": 97, "args": null}, "modifier": "none"}}], "is_synthetic": false}}}], "where_predicates": []},
                                             "header": {"is_const": false, "is_unsafe": false, "is_async": false, "abi": "Rust"}}}}
            },
            "paths": {"2": {"crate_id": 0, "path": ["demo", "Token"], "kind": "struct"}}
        })
    }

    #[test]
    fn every_public_item_is_listed_with_its_signature_at_the_path_it_is_reachable_at() {
        let listing = listing(&demo());
        let expected = "\
# rustdoc JSON format 57
impl Clone for demo::Token
pub async fn demo::grant(name: &str) -> Option<demo::Token>
pub demo::Token.id: u64
pub fn demo::revoke<T: Send>()
pub mod demo
pub struct demo::Token
";
        assert_eq!(listing, expected);
    }

    #[test]
    fn a_changed_signature_changes_the_listing() {
        let mut changed = demo();
        changed["index"]["3"]["inner"]["struct_field"] = serde_json::json!({"primitive": "u32"});
        assert_ne!(listing(&changed), listing(&demo()));
        let diff = difference(&listing(&demo()), &listing(&changed), std::path::Path::new("api/demo.txt"));
        assert!(diff.contains("-pub demo::Token.id: u64\n+pub demo::Token.id: u32"), "{diff}");
    }
}
