//! A probe set that breaks a rule is refused with a message that says what to fix.

use agents_eval::probe::{LoadedSet, ProbeSetError};

fn refused(text: &str) -> String {
    match LoadedSet::from_bytes(text.as_bytes().to_vec(), "set.toml") {
        Err(e @ (ProbeSetError::Parse { .. } | ProbeSetError::Invalid { .. })) => e.to_string(),
        other => panic!("accepted or wrong error: {other:?}"),
    }
}

const HEAD: &str = "format = \"agents.probe-set\"\nversion = 1\nname = \"s\"\nsplit = \"dev\"\n";
const CRITERION: &str = "[[criteria]]\nid = \"c\"\nquestion = \"q?\"\nlabels = [\"yes\", \"no\"]\npositive = \"yes\"\n";

#[test]
fn the_fixture_set_is_valid() {
    let loaded = LoadedSet::from_bytes(crate::fixture::SET.as_bytes().to_vec(), "fixture").unwrap();
    assert_eq!(loaded.set.probes.len(), 4);
}

#[test]
fn each_broken_rule_is_named() {
    let probe = "[[probes]]\nid = \"p\"\nturns = [\"hi\"]\n";
    let cases = [
        (format!("{HEAD}{probe}expect = {{ execute = [\"x\"] }}\n"), "unknown field `execute`"),
        (
            format!("{HEAD}{CRITERION}{probe}gold = {{ c = \"maybe\" }}\n"),
            "gold label `maybe` is not a label of criterion `c`",
        ),
        (format!("{HEAD}{probe}gold = {{ tone = \"yes\" }}\n"), "`tone`, which is not a criterion"),
        (format!("{HEAD}{probe}{probe}"), "probe id `p` is used twice"),
        (format!("{HEAD}[[probes]]\nid = \"../p\"\nturns = [\"hi\"]\n"), "names a directory"),
        (format!("{HEAD}[[probes]]\nid = \"p\"\nturns = []\n"), "needs at least one turn"),
        (format!("{}{probe}", HEAD.replace("agents.probe-set", "x")), "declares format = \"agents.probe-set\""),
        (format!("{}{probe}", HEAD.replace("version = 1", "version = 2")), "reads version 1"),
        (
            format!("{HEAD}{}{probe}", CRITERION.replace("positive = \"yes\"", "positive = \"si\"")),
            "positive label `si`",
        ),
        (format!("{HEAD}{}{probe}", CRITERION.replace("[\"yes\", \"no\"]", "[\"yes\", \"yes\"]")), "two distinct"),
        (format!("{}{probe}", HEAD.replace("dev", "test")), "unknown variant `test`"),
        (HEAD.to_owned(), "missing field `probes`"),
    ];
    for (text, expected) in cases {
        let message = refused(&text);
        assert!(message.contains(expected), "expected `{expected}` in: {message}");
        assert!(message.contains("set.toml"), "{message}");
    }
}
