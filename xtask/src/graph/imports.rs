//! The file-to-file imports of a crate: each `use` tree, each qualified path in code and each
//! path in a macro's tokens that starts with `crate::`, `$crate::`, `super::`, `self::` or the
//! crate's own name, resolved to the file that holds the longest module prefix of the path.

use super::tree::{CrateTree, ModulePath};
use crate::sources;
use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use syn::visit::Visit;

/// The imports between the files of one crate: (from, to) file indices to the names taken.
pub(crate) type Imports = BTreeMap<(usize, usize), BTreeSet<String>>;

/// The imports of `tree`'s files. Edges from a module's file to the files of its own
/// descendants (a parent declaring and re-exporting its children) are ownership, not imports,
/// and are left out; so are a file's paths to itself.
pub(crate) fn imports(tree: &CrateTree) -> Imports {
    let mut found = Imports::new();
    for (from, file) in tree.files.iter().enumerate() {
        let mut paths = Paths { tree, scope: file.module.clone(), found: Vec::new() };
        paths.visit_file(&file.ast);
        for (scope, segments) in paths.found {
            let Some((to, name)) = resolve(tree, &scope, &segments) else { continue };
            if to != from && !tree.files[to].module.starts_with(&file.module) {
                found.entry((from, to)).or_default().insert(name);
            }
        }
    }
    found
}

/// The file that holds the longest module prefix of `segments` (read in module `scope`), and
/// the name taken from it: the segment after that prefix (`*` for a glob), or the module's own
/// name when the path names the module.
pub(crate) fn resolve(tree: &CrateTree, scope: &[String], segments: &[String]) -> Option<(usize, String)> {
    let absolute = absolute(tree, scope, segments)?;
    let known = (0..=absolute.len()).rev().find(|&n| tree.file_of(&absolute[..n]).is_some())?;
    let name = absolute.get(known).or(absolute.last()).cloned().unwrap_or_else(|| "crate".to_owned());
    Some((tree.file_of(&absolute[..known])?, name))
}

/// `segments` from the crate root, when they start with a word that makes them the crate's.
fn absolute(tree: &CrateTree, scope: &[String], segments: &[String]) -> Option<ModulePath> {
    let (first, rest) = segments.split_first()?;
    let mut base: ModulePath = match first.as_str() {
        "crate" | "$crate" => Vec::new(),
        "self" | "super" => scope.to_vec(),
        own if tree.own_name.as_deref() == Some(own) => Vec::new(),
        _ => return None,
    };
    let mut rest = rest;
    if first == "super" {
        base.pop()?;
    }
    while let Some((next, after)) = rest.split_first() {
        if next != "super" {
            break;
        }
        base.pop()?;
        rest = after;
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The crate-relative paths of one file, each with the module it is read in.
struct Paths<'a> {
    tree: &'a CrateTree,
    scope: ModulePath,
    found: Vec<(ModulePath, Vec<String>)>,
}

impl Paths<'_> {
    fn add(&mut self, segments: Vec<String>) {
        let starts = segments.first().map(String::as_str);
        let crate_word = matches!(starts, Some("crate" | "$crate" | "self" | "super"))
            || (starts.is_some() && starts == self.tree.own_name.as_deref());
        if crate_word && segments.len() > 1 {
            self.found.push((self.scope.clone(), segments));
        }
    }

    /// Every path of a `use` tree, its prefix first (`a::{b, c::*}`: `a::b`, `a::c::*`).
    fn add_use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.add_use_tree(prefix, &p.tree);
                prefix.pop();
            }
            // `a::{self}` names the module `a` itself.
            syn::UseTree::Name(n) if n.ident == "self" => self.add(prefix.clone()),
            syn::UseTree::Name(n) => self.add(with(prefix, n.ident.to_string())),
            syn::UseTree::Rename(r) => self.add(with(prefix, r.ident.to_string())),
            syn::UseTree::Glob(_) => self.add(with(prefix, "*".to_owned())),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.add_use_tree(prefix, t)),
        }
    }

    /// The paths in a macro's tokens (`$crate::a::f`, `crate::b::C`), which syn leaves unparsed.
    fn add_tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            if let TokenTree::Group(g) = &tokens[i] {
                self.add_tokens(g.stream());
            }
            let (start, dollar) = match (&tokens[i], tokens.get(i + 1)) {
                (TokenTree::Punct(p), Some(TokenTree::Ident(id))) if p.as_char() == '$' && id == "crate" => {
                    (i + 1, true)
                }
                _ => (i, false),
            };
            let mut segments = Vec::new();
            let mut at = start;
            while let Some(TokenTree::Ident(id)) = tokens.get(at) {
                segments.push(id.to_string());
                if !is_path_separator(&tokens, at + 1) {
                    break;
                }
                at += 3;
            }
            if dollar {
                segments[0] = "$crate".to_owned();
            }
            self.add(segments);
            i = at.max(i) + 1;
        }
    }
}

/// Whether `tokens[at..]` starts with `::`.
fn is_path_separator(tokens: &[TokenTree], at: usize) -> bool {
    matches!(
        (tokens.get(at), tokens.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && b.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint
    )
}

fn with(prefix: &[String], last: String) -> Vec<String> {
    prefix.iter().cloned().chain(std::iter::once(last)).collect()
}

/// The attributes of an item of the kinds that can be `#[cfg(test)]` in library code.
fn attributes(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !sources::is_cfg_test(attributes(item)) {
            syn::visit::visit_item(self, item);
        }
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // A declared module's file is read on its own; an inline one is read here, in its scope.
        if let Some((_, items)) = &m.content {
            self.scope.push(m.ident.to_string());
            items.iter().for_each(|item| self.visit_item(item));
            self.scope.pop();
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.add_use_tree(&mut Vec::new(), &u.tree);
    }
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(in crate::a)` names where an item is seen, not what it uses.
    }
    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.add(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.add_tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}
