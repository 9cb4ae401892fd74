//! One file, one answer: every command and the baseline gate read a manifest through the same
//! validated structure, so they refuse the same files with the same reason and, for a file
//! they accept, agree on its content and its canonical hash.

use crate::common;

use agents_core::baseline::{self, BaselineError, Mode};
use common::*;
use serde_json::Value;
use std::path::Path;

/// The commands that read a manifest file, each with the file in its place.
fn commands(file: &Path, other: &Path, log: &Path, html: &Path) -> Vec<Vec<std::ffi::OsString>> {
    let s = |x: &str| std::ffi::OsString::from(x);
    let p = |x: &Path| x.as_os_str().to_owned();
    vec![
        vec![s("manifest"), s("show"), p(file)],
        vec![s("manifest"), s("hash"), p(file)],
        vec![s("manifest"), s("diff"), p(other), p(file)],
        vec![s("manifest"), s("diff"), p(file), p(other), s("--json")],
        vec![s("manifest"), s("verify"), p(other), p(file)],
        vec![s("manifest"), s("verify"), p(file), p(other)],
        vec![s("manifest"), s("render"), p(file), s("-o"), p(html)],
        vec![s("manifest"), s("render"), p(other), s("--diff"), p(file), s("-o"), p(html)],
        vec![s("audit"), s("verify"), p(log), s("--manifest"), p(file)],
        vec![s("audit"), s("stats"), p(log), s("--manifest"), p(file)],
    ]
}

/// Files that read two ways, or not at all, each with the reason every reader must give.
fn refused(v1: &str) -> Vec<(&'static str, String, &'static str)> {
    let first_tool = v1.find("{\"description\"").unwrap();
    let tool_text = {
        let tools = &v1[first_tool..];
        let end = tools.find("\"uses\":[]}").unwrap() + "\"uses\":[]}".len();
        &tools[..end]
    };
    vec![
        (
            "a key repeated in a tool (`tier` read, then handoff)",
            v1.replacen("\"tier\":\"read\"", "\"tier\":\"read\",\"tier\":\"handoff\"", 1),
            "duplicate key `tier`",
        ),
        (
            "a tool listed twice, the second with a wider policy",
            v1.replacen(
                tool_text,
                &format!("{tool_text},{}", tool_text.replacen("\"read\":[]", "\"read\":[\"/**\"]", 1)),
                1,
            ),
            "two tools are named `get_leave_balance`",
        ),
        ("a glob outside the dialect", v1.replacen("/srv/helpdesk/policies/*.md", "/srv/../etc/*", 1), "is refused"),
        (
            "a key repeated at the top",
            v1.replacen("{\"agent\":", "{\"version\":1,\"agent\":", 1),
            "duplicate key `version`",
        ),
    ]
}

#[test]
fn every_command_and_the_gate_refuse_a_file_with_two_readings_for_the_same_reason() {
    let dir = tempdir();
    let v1_text = helpdesk_v1().to_canonical_string();
    let v1 = write(dir.path(), "v1.json", &v1_text);
    let log = write(dir.path(), "log.jsonl", &seal_chain(normal_run()));
    let html = dir.path().join("r.html");
    for (what, text, reason) in refused(&v1_text) {
        let file = write(dir.path(), "file.json", &text);
        let expected_error = {
            let e = agents_core::manifest::Manifest::parse(&text).expect_err(what);
            e.to_string()
        };
        assert!(expected_error.contains(reason), "{what}: {expected_error}");
        for args in commands(&file, &v1, &log, &html) {
            let o = agents(&args);
            let err = stderr(&o);
            assert_eq!(code(&o), 2, "{what}: {args:?} did not refuse the file:\n{}{err}", stdout(&o));
            assert!(err.contains(&expected_error), "{what}: {args:?} gave another reason:\n{err}");
        }
        // The baseline gate refuses it as a baseline and as the manifest to check.
        match baseline::check_with(&v1_text, &file, Mode::Verify) {
            Err(BaselineError::InvalidBaseline { error, .. }) => {
                assert_eq!(error.to_string(), expected_error, "{what}")
            }
            other => panic!("{what}: the gate accepted the baseline: {other:?}"),
        }
        match baseline::check_with(&text, &v1, Mode::Verify) {
            Err(BaselineError::InvalidManifest(error)) => assert_eq!(error.to_string(), expected_error, "{what}"),
            other => panic!("{what}: the gate accepted the manifest: {other:?}"),
        }
    }
}

#[test]
fn every_command_reads_a_non_canonical_file_the_same_way_and_says_so() {
    let dir = tempdir();
    let m = helpdesk_v1();
    let canonical_sha = m.sha256();
    // Reordered tools, a repeated glob, pretty printing: one reading, not canonical.
    let mut v: Value = serde_json::to_value(&m).unwrap();
    v["tools"].as_array_mut().unwrap().reverse();
    let t = v["tools"].as_array_mut().unwrap().iter_mut().find(|t| t["name"] == "lookup_policy").unwrap();
    t["policy"]["fs"]["read"] = serde_json::json!(["/srv/helpdesk/policies/*.md", "/srv/helpdesk/policies/*.md"]);
    let text = serde_json::to_string_pretty(&v).unwrap();
    let file = write(dir.path(), "pretty.json", &text);
    let v1 = write(dir.path(), "v1.json", &m.to_canonical_string());
    let log = write(dir.path(), "log.jsonl", &seal_chain(normal_run()));
    let html = dir.path().join("r.html");

    for args in commands(&file, &v1, &log, &html) {
        let o = agents(&args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert_ne!(code(&o), 2, "{args:?}: {all}");
        let verb = args[1].to_string_lossy().into_owned();
        match (args[0].to_string_lossy().as_ref(), verb.as_str()) {
            ("manifest", "show") => {
                assert!(all.contains(&canonical_sha) && all.contains("not canonical"), "{all}");
            }
            ("manifest", "hash") => {
                assert!(all.contains(&canonical_sha) && all.contains("not in canonical form"), "{all}")
            }
            ("manifest", "diff") => {
                assert_eq!(code(&o), 0, "{all}");
                if args.iter().any(|a| a == "--json") {
                    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
                    assert_eq!(v["changes"], serde_json::json!([]), "{all}");
                    assert_eq!(v["old"]["sha256"], canonical_sha);
                    assert_eq!(v["old"]["canonical"], false);
                } else {
                    assert!(all.contains("no capability or description differences"), "{all}");
                    assert!(all.contains("not in canonical form"), "{all}");
                }
            }
            ("manifest", "verify") => {
                // Byte for byte it is not the baseline; in content nothing differs.
                assert_eq!(code(&o), 1, "{all}");
                assert!(all.contains("equal in content") && all.contains("not in canonical form"), "{all}");
            }
            ("manifest", "render") => assert_eq!(code(&o), 0, "{all}"),
            ("audit", "verify") => {
                // The records name the canonical hash of the same content.
                assert_eq!(code(&o), 0, "{all}");
                assert!(all.contains(&format!("every record names manifest {canonical_sha}")), "{all}");
            }
            ("audit", "stats") => assert!(all.contains("records:"), "{all}"),
            other => panic!("no expectation for {other:?}"),
        }
    }
    // The gate: content equal, bytes not; and non-canonical text is never the manifest to check.
    match baseline::check_with(&m.to_canonical_string(), &file, Mode::Verify) {
        Err(BaselineError::Differs { diff, .. }) => assert!(diff.is_empty()),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        baseline::check_with(&text, &v1, Mode::Verify),
        Err(BaselineError::InvalidManifest(agents_core::manifest::ManifestError::NotCanonical))
    ));
}
