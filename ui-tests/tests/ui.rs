//! What must not compile, with the message a user reads, and what must compile. Cases in a
//! topic folder (`fail/grants/`, `fail/witness/`, ...) are written as code that tries to get
//! around a guarantee would be.

///
/// The two kinds run as two sets. A set of `compile_fail` cases alone is checked with
/// `cargo check` in one call that compiles every case side by side; a set that also holds a
/// `pass` case is built (`cargo build`) one case at a time, each after a `cargo clean`, which
/// is what the `pass` cases need (they are linked and run) and several times slower for the
/// others.
#[test]
fn ui() {
    let must_not_compile = trybuild::TestCases::new();
    must_not_compile.compile_fail("tests/ui/fail/*.rs");
    must_not_compile.compile_fail("tests/ui/fail/*/*.rs");
    // Dropping the set runs it; the `pass` set then reuses the project directory.
    drop(must_not_compile);

    let must_compile = trybuild::TestCases::new();
    must_compile.pass("tests/ui/pass/*.rs");
    must_compile.pass("tests/ui/pass/*/*.rs");
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
