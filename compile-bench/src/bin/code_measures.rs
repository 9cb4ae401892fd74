//! Prints, for each crate of the workspace, the longest functions and the largest files of its
//! `src/`, then the largest files of the workspace: the figures a reader of the code meets.
//!
//! ```sh
//! cargo run -p compile-bench --features code-measures --bin code-measures [-- <workspace dir> [<top n>]]
//! ```
//!
//! A function's length is the lines from its `fn` keyword to its closing brace (attributes and
//! doc comments not counted); free functions, methods and trait methods with a body are
//! counted, nested ones too. Unit tests (`#[cfg(test)]` modules and `tests.rs` / `*_tests.rs`
//! files) are left out; a file's size is its line count.

use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The longer functions are reported against this length.
const LONG: usize = 80;

struct Function {
    name: String,
    file: String,
    line: usize,
    lines: usize,
}

struct Finder<'a> {
    file: &'a str,
    scope: Vec<String>,
    found: Vec<Function>,
}

impl Finder<'_> {
    fn add(&mut self, name: String, start: proc_macro2::Span, block: &syn::Block) {
        let line = start.start().line;
        let lines = block.span().end().line + 1 - line;
        let name = self.scope.iter().chain(std::iter::once(&name)).cloned().collect::<Vec<_>>().join("::");
        self.found.push(Function { name, file: self.file.to_owned(), line, lines });
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string().trim() == "test"))
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.add(f.sig.ident.to_string(), f.sig.fn_token.span, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let ty = &i.self_ty;
        self.scope.push(quote_type(ty));
        syn::visit::visit_item_impl(self, i);
        self.scope.pop();
    }
    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.scope.push(t.ident.to_string());
        syn::visit::visit_item_trait(self, t);
        self.scope.pop();
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.add(f.sig.ident.to_string(), f.sig.fn_token.span, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.add(f.sig.ident.to_string(), f.sig.fn_token.span, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// The last segment of an impl's self type (`Runtime`, `Gate<'_>` as `Gate`).
fn quote_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map_or_else(String::new, |s| s.ident.to_string()),
        _ => "_".to_owned(),
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n == "tests.rs" || n.ends_with("_tests.rs"))
}

/// The workspace's member directories, read from its `Cargo.toml` (`members = [...]`).
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let list = manifest
        .split_once("members")
        .and_then(|(_, rest)| rest.split_once('['))
        .and_then(|(_, rest)| rest.split_once(']'));
    let Some((list, _)) = list else { panic!("no `members = [...]` in the workspace's Cargo.toml") };
    list.split(',').map(|m| m.trim().trim_matches('"').to_owned()).filter(|m| !m.is_empty()).collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(args.next().unwrap_or_else(|| ".".to_owned()));
    let top: usize = args.next().map_or(3, |n| n.parse().expect("the number of functions to print"));
    let mut all_files: Vec<(usize, String)> = Vec::new();
    println!("crate: files, lines of src/; functions over {LONG} lines; the longest functions; the largest file");
    for member in members(&root) {
        let mut files = Vec::new();
        rust_files(&root.join(&member).join("src"), &mut files);
        let mut found = Vec::new();
        let mut sizes = Vec::new();
        for path in files.iter().filter(|p| !is_test_file(p)) {
            let shown = path.strip_prefix(&root).unwrap_or(path).display().to_string();
            let text = std::fs::read_to_string(path).expect("a readable source file");
            sizes.push((text.lines().count(), shown.clone()));
            let ast = match syn::parse_file(&text) {
                Ok(ast) => ast,
                Err(e) => {
                    eprintln!("{shown}: not parsed ({e})");
                    continue;
                }
            };
            let mut finder = Finder { file: &shown, scope: Vec::new(), found: Vec::new() };
            finder.visit_file(&ast);
            found.extend(finder.found);
        }
        found.sort_by(|a, b| b.lines.cmp(&a.lines).then(a.file.cmp(&b.file)));
        sizes.sort_by_key(|s| std::cmp::Reverse(s.0));
        let total: usize = sizes.iter().map(|s| s.0).sum();
        let long = found.iter().filter(|f| f.lines > LONG).count();
        println!("{member}: {} files, {total} lines; {long} functions over {LONG} lines", sizes.len());
        for f in found.iter().take(top) {
            println!("    {:>5} lines  {} ({}:{})", f.lines, f.name, f.file, f.line);
        }
        if let Some((n, file)) = sizes.first() {
            println!("    largest file: {file} ({n} lines)");
        }
        all_files.extend(sizes);
    }
    all_files.sort_by_key(|s| std::cmp::Reverse(s.0));
    println!("largest files of the workspace:");
    for (n, file) in all_files.iter().take(10) {
        println!("    {n:>5} lines  {file}");
    }
}
