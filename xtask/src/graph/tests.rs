use super::Graph;
use super::tree::CrateTree;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A crate made of `files` (path, text), its root `src/lib.rs`, named `fixture`.
fn load(files: &[(&str, &str)]) -> CrateTree {
    let files: HashMap<PathBuf, String> = files.iter().map(|(p, t)| (PathBuf::from(p), (*t).to_owned())).collect();
    let read = |p: &Path| files.get(p).cloned();
    CrateTree::load(Path::new("src/lib.rs"), Some("fixture".to_owned()), &read).expect("the fixture loads")
}

/// Each circle as its files' paths.
fn circles(tree: &CrateTree) -> Vec<Vec<String>> {
    let graph = Graph::of(tree);
    graph.circles.iter().map(|c| c.iter().map(|&i| tree.files[i].path.display().to_string()).collect()).collect()
}

/// The imports as `from -> to: names`.
fn imports(tree: &CrateTree) -> Vec<String> {
    let graph = Graph::of(tree);
    let path = |i: usize| tree.files[i].path.display().to_string();
    let mut found = Vec::new();
    for ((from, to), names) in &graph.imports {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        found.push(format!("{} -> {}: {}", path(*from), path(*to), names.join(", ")));
    }
    found
}

#[test]
fn two_files_that_import_from_each_other_are_a_circle_with_the_names_each_takes() {
    let tree = load(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::{B, helper as h};\npub struct A;\n"),
        ("src/b.rs", "pub struct B;\npub fn helper() -> fixture::a::A { crate::a::A }\n"),
    ]);
    assert_eq!(circles(&tree), [["src/a.rs", "src/b.rs"]]);
    assert_eq!(imports(&tree), ["src/a.rs -> src/b.rs: B, helper", "src/b.rs -> src/a.rs: A"]);
    let report = Graph::of(&tree).report("fixture", &|i| tree.files[i].path.display().to_string());
    assert_eq!(
        report,
        "fixture: 1 circle\n    circle 1 (2 files):\n        src/a.rs -> src/b.rs: B, helper\n        src/b.rs -> src/a.rs: A\n"
    );
}

#[test]
fn a_parent_that_declares_and_reexports_its_children_does_not_import_from_them() {
    let tree = load(&[
        ("src/lib.rs", "mod run;\npub use run::{Driver, Shared};\nfn f() { crate::run::driver::go() }\n"),
        ("src/run/mod.rs", "mod driver;\npub use driver::Driver;\npub use self::driver::go;\npub struct Shared;\n"),
        ("src/run/driver.rs", "use super::Shared;\npub struct Driver;\npub fn go() {}\n"),
    ]);
    assert!(circles(&tree).is_empty());
    assert_eq!(imports(&tree), ["src/run/driver.rs -> src/run/mod.rs: Shared"]);
}

#[test]
fn super_and_self_are_read_from_the_module_they_are_written_in() {
    let tree = load(&[
        ("src/lib.rs", "mod run;\nmod audit;\n"),
        ("src/audit.rs", "pub struct Record;\n"),
        ("src/run/mod.rs", "mod gate;\nmod driver;\n"),
        (
            "src/run/gate.rs",
            "use super::driver::Driver;\nuse super::super::audit::Record;\nmod inner {\n    use super::Gate;\n}\npub struct Gate;\n",
        ),
        ("src/run/driver.rs", "pub struct Driver(self::Inner);\nstruct Inner(super::gate::Gate);\n"),
    ]);
    assert_eq!(circles(&tree), [["src/run/gate.rs", "src/run/driver.rs"]]);
    assert_eq!(
        imports(&tree),
        [
            "src/run/gate.rs -> src/run/driver.rs: Driver",
            "src/run/gate.rs -> src/audit.rs: Record",
            "src/run/driver.rs -> src/run/gate.rs: Gate",
        ]
    );
}

#[test]
fn unit_tests_are_not_imports() {
    let tree = load(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
        (
            "src/b.rs",
            "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n#[cfg(test)]\nfn helper() -> crate::a::A { crate::a::A }\n#[path = \"b_tests.rs\"]\nmod more;\n",
        ),
        ("src/b_tests.rs", "use crate::a::A;\n"),
    ]);
    assert!(circles(&tree).is_empty());
    assert_eq!(tree.files.len(), 3, "b_tests.rs is not read");
}

#[test]
fn paths_in_macros_globs_and_modules_named_with_self_are_imports() {
    let tree = load(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("src/a.rs", "use crate::b::*;\npub const LIMIT: u32 = 1;\n"),
        ("src/c.rs", "use crate::a::{self};\n"),
        (
            "src/b.rs",
            "pub fn f() -> String { format!(\"{}\", crate::a::LIMIT) }\nmacro_rules! m { () => { $crate::a::LIMIT }; }\n",
        ),
    ]);
    assert_eq!(imports(&tree), ["src/a.rs -> src/b.rs: *", "src/b.rs -> src/a.rs: LIMIT", "src/c.rs -> src/a.rs: a"]);
    assert_eq!(circles(&tree).len(), 1);
}

#[test]
fn a_file_beside_its_folder_owns_the_files_in_it() {
    let tree = load(&[
        ("src/lib.rs", "mod audit;\nmod run;\n"),
        ("src/audit.rs", "mod sqlite;\npub use sqlite::Sink;\npub struct Record;\n"),
        ("src/audit/sqlite.rs", "use super::Record;\npub struct Sink;\n"),
        ("src/run.rs", "use crate::audit::Sink;\n"),
    ]);
    let modules: Vec<(String, String)> =
        tree.files.iter().map(|f| (f.path.display().to_string(), f.module.join("::"))).collect();
    assert_eq!(
        modules,
        [
            ("src/lib.rs".to_owned(), String::new()),
            ("src/audit.rs".to_owned(), "audit".to_owned()),
            ("src/audit/sqlite.rs".to_owned(), "audit::sqlite".to_owned()),
            ("src/run.rs".to_owned(), "run".to_owned()),
        ]
    );
    assert_eq!(imports(&tree), ["src/audit/sqlite.rs -> src/audit.rs: Record", "src/run.rs -> src/audit.rs: Sink"]);
    assert!(circles(&tree).is_empty());
}
