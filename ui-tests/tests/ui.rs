//! What must not compile, with the message a user reads, and what must compile. Cases in a
//! topic folder (`fail/grants/`, `fail/witness/`, ...) are written as code that tries to get
//! around a guarantee would be.

/// Every case is checked with `cargo check`, in one call that compiles the cases side by
/// side. The cases that must compile are not here: each is a test target of this crate
/// (`Cargo.toml`), built with the workspace and run by `cargo test`, so their dependencies are
/// not built a second time in trybuild's own target directory.
#[test]
fn ui() {
    let must_not_compile = trybuild::TestCases::new();
    must_not_compile.compile_fail("tests/ui/fail/*.rs");
    must_not_compile.compile_fail("tests/ui/fail/*/*.rs");
}

/// Every case under `tests/ui/pass/` is a `[[test]]` target of this crate: a case added
/// without its target would otherwise never be compiled.
#[test]
fn every_must_compile_case_is_a_test_target() {
    let manifest = std::fs::read_to_string("Cargo.toml").unwrap();
    let declared: std::collections::BTreeSet<String> = manifest
        .lines()
        .filter_map(|l| l.trim().strip_prefix("path = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .filter(|p| p.starts_with("tests/ui/pass/"))
        .map(str::to_owned)
        .collect();
    let mut cases = std::collections::BTreeSet::new();
    let mut stack = vec![std::path::PathBuf::from("tests/ui/pass")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                cases.insert(path.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    assert!(cases.len() >= 20, "found only {} cases: is the test run from the crate's directory?", cases.len());
    let missing: Vec<_> = cases.difference(&declared).collect();
    let stale: Vec<_> = declared.difference(&cases).collect();
    assert!(missing.is_empty(), "cases with no [[test]] target in ui-tests/Cargo.toml: {missing:?}");
    assert!(stale.is_empty(), "[[test]] targets whose case file is gone: {stale:?}");
}

/// What a user reads names only what the user wrote and the library's public items: no
/// generated name (`__agents_*`, `__A`, `__cx`, ...) and no path through `__private`. Lines
/// that quote the case's own source (`NN | ...`) are the user's code and are not checked.
#[test]
fn messages_name_no_generated_item() {
    let mut offenders = Vec::new();
    let mut checked = 0;
    let mut stack = vec![std::path::PathBuf::from("tests/ui")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "stderr") {
                continue;
            }
            checked += 1;
            let shown = path.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines() {
                // A quoted source line: `12 |     code`.
                let quoted = line.split_once('|').is_some_and(|(n, _)| {
                    let n = n.trim();
                    !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())
                });
                if quoted {
                    continue;
                }
                let generated = ["__private", "__agents_", "__A", "__T", "__cx", "__call", "__args", "__future"];
                if let Some(name) = generated.iter().find(|g| line.contains(*g)) {
                    offenders.push(format!("{shown}: `{name}` in: {line}"));
                }
            }
        }
    }
    assert!(checked > 100, "found only {checked} .stderr files: is the test run from the crate's directory?");
    assert!(offenders.is_empty(), "messages that name generated items:\n{}", offenders.join("\n"));
}
