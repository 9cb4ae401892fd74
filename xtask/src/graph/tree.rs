//! A crate's module tree: its files, found the way rustc finds them, from the crate root along
//! its `mod` declarations (`#[path]` included), with the module each file is.

use crate::sources;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Reads a source file; `None` when there is none at that path.
pub(crate) type Read<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// A module's path from the crate root (`["run", "gate"]`; the root is empty).
pub(crate) type ModulePath = Vec<String>;

/// One crate's library files, unit tests left out.
pub(crate) struct CrateTree {
    /// The crate's own name (`agents_runtime`) when paths may start with it, i.e. for a library.
    pub(crate) own_name: Option<String>,
    pub(crate) files: Vec<SourceFile>,
    /// Every module, inline ones too, to the index of the file that holds it.
    pub(crate) modules: BTreeMap<ModulePath, usize>,
}

/// One file of the tree.
pub(crate) struct SourceFile {
    pub(crate) path: PathBuf,
    /// The module the file is.
    pub(crate) module: ModulePath,
    pub(crate) ast: syn::File,
}

impl CrateTree {
    /// The tree whose root is `root` (`src/lib.rs`, `src/main.rs`, a `src/bin/` file).
    pub(crate) fn load(root: &Path, own_name: Option<String>, read: Read<'_>) -> Result<CrateTree, String> {
        let mut tree = CrateTree { own_name, files: Vec::new(), modules: BTreeMap::new() };
        tree.add_file(root, Vec::new(), true, read)?;
        Ok(tree)
    }

    /// The file that holds `module`.
    pub(crate) fn file_of(&self, module: &[String]) -> Option<usize> {
        self.modules.get(module).copied()
    }

    /// Parses the file at `path` (the module `module`), then the files of the modules it
    /// declares. A `mod.rs`-like file (a crate root, a `mod.rs`, a file named by `#[path]`)
    /// keeps its children beside it; `a/b.rs` keeps them in `a/b/`.
    fn add_file(&mut self, path: &Path, module: ModulePath, mod_rs: bool, read: Read<'_>) -> Result<(), String> {
        let text = read(path).ok_or_else(|| format!("{}: not found", path.display()))?;
        let ast = syn::parse_file(&text).map_err(|e| format!("{}: not parsed ({e})", path.display()))?;
        let here = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let children = if mod_rs { here.clone() } else { here.join(path.file_stem().unwrap_or_default()) };
        let index = self.files.len();
        self.modules.insert(module.clone(), index);
        let items = ast.items.clone();
        self.files.push(SourceFile { path: path.to_path_buf(), module: module.clone(), ast });
        let place = Place { index, module, here, children };
        self.add_items(&items, &place, read)
    }

    /// The modules declared by `items`: inline ones are entered, others loaded from their files.
    fn add_items(&mut self, items: &[syn::Item], place: &Place, read: Read<'_>) -> Result<(), String> {
        for item in items {
            let syn::Item::Mod(m) = item else { continue };
            if sources::is_cfg_test(&m.attrs) {
                continue;
            }
            let name = m.ident.to_string();
            let mut module = place.module.clone();
            module.push(name.clone());
            if let Some((_, inner)) = &m.content {
                self.modules.insert(module.clone(), place.index);
                let children = place.children.join(&name);
                let inline = Place { index: place.index, module, here: children.clone(), children };
                self.add_items(inner, &inline, read)?;
                continue;
            }
            let (path, mod_rs) = match path_attribute(&m.attrs) {
                Some(named) => (place.here.join(named), true),
                None => {
                    let beside = place.children.join(format!("{name}.rs"));
                    if read(&beside).is_some() {
                        (beside, false)
                    } else {
                        (place.children.join(&name).join("mod.rs"), true)
                    }
                }
            };
            if !sources::is_test_file(&path) {
                self.add_file(&path, module, mod_rs, read)?;
            }
        }
        Ok(())
    }
}

/// Where declarations are read: the file, the module, the directory of the file (for
/// `#[path]`) and the directory of the module's children.
struct Place {
    index: usize,
    module: ModulePath,
    here: PathBuf,
    children: PathBuf,
}

/// The value of a `#[path = "..."]` attribute.
fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
        syn::Meta::NameValue(syn::MetaNameValue {
            value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }),
            ..
        }) => Some(s.value()),
        _ => None,
    })
}

/// The crate roots under a member's `src/`: its library, its main binary, its `src/bin/`
/// binaries; each with its label and, for the library, the crate's own name.
pub(crate) fn crate_roots(src: &Path, package: &str) -> Vec<(String, PathBuf, Option<String>)> {
    let mut roots = Vec::new();
    if src.join("lib.rs").is_file() {
        roots.push((package.to_owned(), src.join("lib.rs"), Some(package.replace('-', "_"))));
    }
    if src.join("main.rs").is_file() {
        roots.push((format!("{package} (main.rs)"), src.join("main.rs"), None));
    }
    let mut bins: Vec<PathBuf> = std::fs::read_dir(src.join("bin"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter_map(|p| if p.is_dir() { Some(p.join("main.rs")).filter(|m| m.is_file()) } else { Some(p) })
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    bins.sort();
    for bin in bins {
        let label = format!("{package} (bin/{})", bin.strip_prefix(src.join("bin")).unwrap_or(&bin).display());
        roots.push((label, bin, None));
    }
    roots
}
