//! `cargo xtask measures [--check] [--top N]`: for each crate of the workspace, the longest
//! functions and the largest files of its `src/`, then the largest files of the workspace: the
//! figures a reader of the code meets. `--check` fails when a function is over [`LONG_FN`]
//! lines or a file over [`LONG_FILE`], listing each.
//!
//! A function's length is the lines from its `fn` keyword to its closing brace (attributes and
//! doc comments not counted); free functions, methods and trait methods with a body are
//! counted, nested ones too. A file's size is its line count without its `#[cfg(test)]`
//! modules. Unit tests (`#[cfg(test)]` modules and `tests.rs` / `*_tests.rs` files) are left
//! out; so are `tests/` and `benches/`, which are not under `src/`.

use crate::sources;
use std::path::Path;
use syn::spanned::Spanned;
use syn::visit::Visit;

/// A function longer than this many lines is an offender.
pub(crate) const LONG_FN: usize = 80;
/// A file longer than this many lines (of library code) is an offender.
pub(crate) const LONG_FILE: usize = 800;

/// `cargo xtask measures [--check] [--top N]`.
pub(crate) fn run_measures(args: Vec<String>) -> Result<(), String> {
    let mut check = false;
    let mut top = 3;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--top" => {
                let n = args.next().ok_or("`--top` needs a number")?;
                top = n.parse().map_err(|_| format!("`--top` needs a number, got `{n}`"))?;
            }
            other => return Err(format!("`measures` takes `--check` and `--top N`, got `{other}`")),
        }
    }
    let root = crate::cmd::root();
    let crates = measure_workspace(&root)?;
    print_report(&crates, top);
    let offenders = Offenders::of(&crates);
    if check && !offenders.is_empty() {
        return Err(offenders.to_string());
    }
    Ok(())
}

/// One function's place and length.
pub(crate) struct Function {
    /// `Type::method`, `Trait::method` or `function`.
    pub(crate) name: String,
    pub(crate) file: String,
    pub(crate) line: usize,
    pub(crate) lines: usize,
}

/// One member's measures: its functions, longest first, and its files, largest first.
struct CrateMeasures {
    member: String,
    functions: Vec<Function>,
    /// (lines of library code, file).
    files: Vec<(usize, String)>,
}

fn measure_workspace(root: &Path) -> Result<Vec<CrateMeasures>, String> {
    let mut crates = Vec::new();
    for member in sources::members(root)? {
        let mut functions = Vec::new();
        let mut files = Vec::new();
        for path in sources::library_files(&root.join(&member).join("src")) {
            let shown = sources::shown(root, &path);
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{shown}: {e}"))?;
            let ast = syn::parse_file(&text).map_err(|e| format!("{shown}: not parsed ({e})"))?;
            files.push((text.lines().count().saturating_sub(test_lines(&ast)), shown.clone()));
            functions.extend(functions_of(&ast, &shown));
        }
        functions.sort_by(|a, b| b.lines.cmp(&a.lines).then(a.file.cmp(&b.file)));
        files.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        crates.push(CrateMeasures { member, functions, files });
    }
    Ok(crates)
}

/// The functions with a body in `ast`, outside `#[cfg(test)]` modules.
pub(crate) fn functions_of(ast: &syn::File, file: &str) -> Vec<Function> {
    let mut finder = Finder { file, scope: Vec::new(), found: Vec::new() };
    finder.visit_file(ast);
    finder.found
}

/// The lines of `ast`'s `#[cfg(test)]` modules (at any depth, the outermost counted).
pub(crate) fn test_lines(ast: &syn::File) -> usize {
    struct Tests(usize);
    impl<'ast> Visit<'ast> for Tests {
        fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
            if sources::is_cfg_test(&m.attrs) {
                self.0 += m.span().end().line + 1 - m.span().start().line;
            } else {
                syn::visit::visit_item_mod(self, m);
            }
        }
    }
    let mut tests = Tests(0);
    tests.visit_file(ast);
    tests.0
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

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !sources::is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.add(f.sig.ident.to_string(), f.sig.fn_token.span, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        self.scope.push(type_name(&i.self_ty));
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
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map_or_else(String::new, |s| s.ident.to_string()),
        _ => "_".to_owned(),
    }
}

fn print_report(crates: &[CrateMeasures], top: usize) {
    println!(
        "crate: files, lines of src/; functions over {LONG_FN} lines, files over {LONG_FILE}; the longest functions; the largest file"
    );
    for c in crates {
        let total: usize = c.files.iter().map(|f| f.0).sum();
        let long_fns = c.functions.iter().filter(|f| f.lines > LONG_FN).count();
        let long_files = c.files.iter().filter(|f| f.0 > LONG_FILE).count();
        println!(
            "{}: {} files, {total} lines; {long_fns} functions over {LONG_FN} lines, {long_files} files over {LONG_FILE}",
            c.member,
            c.files.len()
        );
        for f in c.functions.iter().take(top) {
            println!("    {:>5} lines  {} ({}:{})", f.lines, f.name, f.file, f.line);
        }
        if let Some((n, file)) = c.files.first() {
            println!("    largest file: {file} ({n} lines)");
        }
    }
    let mut all: Vec<&(usize, String)> = crates.iter().flat_map(|c| &c.files).collect();
    all.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    println!("largest files of the workspace:");
    for (n, file) in all.iter().take(10) {
        println!("    {n:>5} lines  {file}");
    }
}

/// The functions and files over the limits.
struct Offenders<'a> {
    functions: Vec<&'a Function>,
    files: Vec<&'a (usize, String)>,
}

impl<'a> Offenders<'a> {
    fn of(crates: &'a [CrateMeasures]) -> Self {
        Offenders {
            functions: crates.iter().flat_map(|c| &c.functions).filter(|f| f.lines > LONG_FN).collect(),
            files: crates.iter().flat_map(|c| &c.files).filter(|f| f.0 > LONG_FILE).collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.functions.is_empty() && self.files.is_empty()
    }
}

impl std::fmt::Display for Offenders<'_> {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(out, "{} functions over {LONG_FN} lines:", self.functions.len())?;
        for f in &self.functions {
            writeln!(out, "    {:>5} lines  {} ({}:{})", f.lines, f.name, f.file, f.line)?;
        }
        writeln!(out, "{} files over {LONG_FILE} lines:", self.files.len())?;
        for (n, file) in &self.files {
            writeln!(out, "    {n:>5} lines  {file}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> syn::File {
        syn::parse_file(text).expect("a test source")
    }

    #[test]
    fn a_function_is_measured_from_fn_to_its_closing_brace_with_its_type_as_scope() {
        let ast =
            parse("/// Doc.\n#[inline]\nfn free() {\n    let _ = 1;\n}\nimpl Gate<'_> {\n    fn check(&self) {}\n}\n");
        let found = functions_of(&ast, "src/lib.rs");
        let got: Vec<(&str, usize, usize)> = found.iter().map(|f| (f.name.as_str(), f.line, f.lines)).collect();
        assert_eq!(got, [("free", 3, 3), ("Gate::check", 7, 1)]);
    }

    #[test]
    fn unit_tests_are_not_library_code() {
        let ast = parse("fn kept() {}\n#[cfg(test)]\nmod tests {\n    fn left_out() {}\n}\n");
        let names: Vec<String> = functions_of(&ast, "src/lib.rs").into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["kept"]);
        assert_eq!(test_lines(&ast), 4, "the module from its attribute to its closing brace");
    }
}
