//! `cargo xtask graph [--check]`: the circles of files in each crate of the workspace.
//!
//! Each crate root under a member's `src/` (its library, `main.rs`, the files of `src/bin/`)
//! is read with the files of the modules it declares ([`tree`]), unit tests left out
//! (`#[cfg(test)]` items and modules, `tests.rs` / `*_tests.rs` files). A file imports from
//! another when one of its `use` trees, qualified paths or macro paths starting with
//! `crate::`, `super::`, `self::` or the crate's own name resolves to it: to the file that holds
//! the longest module prefix of the path ([`imports`]). A module's file declaring and
//! re-exporting its own descendants owns them; that is not an import. Files that reach each
//! other through imports, directly or through others, form a circle ([`circles`]).
//!
//! The report prints per crate each circle, with the names each of its files takes from the
//! others of the circle, and their count; `--check` fails when any crate has a circle.

mod circles;
mod imports;
mod tree;

#[cfg(test)]
mod tests;

use crate::sources;
use imports::Imports;
use std::collections::BTreeSet;
use std::path::Path;
use tree::CrateTree;

/// `cargo xtask graph [--check]`.
pub(crate) fn run_graph(args: Vec<String>) -> Result<(), String> {
    let check = match args.as_slice() {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err(format!("`graph` takes only `--check`, got `{}`", args.join(" "))),
    };
    let root = crate::cmd::root();
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let mut total = 0;
    for member in sources::members(&root)? {
        let src = root.join(&member).join("src");
        for (label, crate_root, own_name) in tree::crate_roots(&src, &package_name(&root.join(&member))?) {
            let tree = CrateTree::load(&crate_root, own_name, &read)?;
            let found = Graph::of(&tree);
            print!("{}", found.report(&label, &|i| sources::shown(&root, &tree.files[i].path)));
            total += found.circles.len();
        }
    }
    println!("{total} circles in the workspace");
    if check && total > 0 {
        return Err(format!("{total} circles of files; each file of a circle must stop importing from the next"));
    }
    Ok(())
}

/// The package name in a member's `Cargo.toml`.
fn package_name(member: &Path) -> Result<String, String> {
    let path = member.join("Cargo.toml");
    let manifest = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    manifest
        .lines()
        .find_map(|l| {
            l.trim().strip_prefix("name").map(str::trim)?.strip_prefix('=').map(|v| v.trim().trim_matches('"'))
        })
        .map(str::to_owned)
        .ok_or_else(|| format!("{}: no package name", path.display()))
}

/// One crate's imports and its circles.
pub(crate) struct Graph {
    pub(crate) imports: Imports,
    /// Each circle's files (indices into the tree's files), sorted.
    pub(crate) circles: Vec<Vec<usize>>,
}

impl Graph {
    /// The imports between `tree`'s files and the circles they make.
    pub(crate) fn of(tree: &CrateTree) -> Graph {
        let imports = imports::imports(tree);
        let mut edges = vec![Vec::new(); tree.files.len()];
        for &(from, to) in imports.keys() {
            edges[from].push(to);
        }
        Graph { circles: circles::circles(&edges), imports }
    }

    /// The crate's line and, for each circle, each file's imports from the others in it.
    pub(crate) fn report(&self, label: &str, shown: &dyn Fn(usize) -> String) -> String {
        let mut out = match self.circles.len() {
            0 => format!("{label}: no circles\n"),
            1 => format!("{label}: 1 circle\n"),
            n => format!("{label}: {n} circles\n"),
        };
        for (n, circle) in self.circles.iter().enumerate() {
            out += &format!("    circle {} ({} files):\n", n + 1, circle.len());
            let members: BTreeSet<usize> = circle.iter().copied().collect();
            for ((from, to), names) in &self.imports {
                if members.contains(from) && members.contains(to) {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    out += &format!("        {} -> {}: {}\n", shown(*from), shown(*to), names.join(", "));
                }
            }
        }
        out
    }
}
