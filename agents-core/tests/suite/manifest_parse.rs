//! One reading of a manifest: `Manifest::parse` refuses every text a reader could read two
//! ways, says where, and normalizes what it accepts.

use agents_core::manifest::{AgentEntry, Manifest, ManifestError, ParamEntry, PolicyEntry, ToolEntry};
use agents_core::{Risk, Tier};
use serde_json::{Value, json};

fn tool(name: &str, tier: Tier) -> ToolEntry {
    let mut policy = PolicyEntry::default();
    policy.fs.read = vec!["/srv/*.json".into()];
    policy.net.hosts = vec!["api.example.com:443".into()];
    policy.env.vars = vec!["REGION".into()];
    ToolEntry {
        name: name.into(),
        title: (tier == Tier::Action).then(|| format!("Run {name}")),
        description: format!("The {name} tool."),
        permission: "desk.use".into(),
        tier,
        mutating: tier == Tier::Action,
        risk: Risk::Medium,
        policy,
        parameters: vec![
            ParamEntry { name: "id".into(), rust_type: "u64".into(), secret: false },
            ParamEntry { name: "pin".into(), rust_type: "String".into(), secret: true },
        ],
        uses: vec![],
        import: None,
        handoff: None,
    }
}

fn manifest() -> Manifest {
    let agent = AgentEntry {
        skills: vec![agents_core::manifest::SkillEntry { name: "s".into(), tools: vec!["a".into()], io: None }],
        ceiling: Some(vec!["desk.use".into()]),
        ..AgentEntry::new("desk", "Helps.")
    };
    Manifest::from_entries(agent, vec![tool("a", Tier::Read), tool("b", Tier::Action)]).unwrap()
}

/// The canonical text with `needle` (which must occur once) replaced by `with`.
fn edit(needle: &str, with: &str) -> String {
    let text = manifest().to_canonical_string();
    assert_eq!(text.matches(needle).count(), 1, "`{needle}` must occur once in {text}");
    text.replacen(needle, with, 1)
}

/// 1-based (line, column) of the end of the `nth` occurrence of `what` in `text`.
fn end_of(text: &str, what: &str, nth: usize) -> (usize, usize) {
    let start = text.match_indices(what).nth(nth).unwrap_or_else(|| panic!("no {nth}th `{what}`")).0;
    let end = start + what.len();
    let line = text[..end].matches('\n').count() + 1;
    let line_start = text[..end].rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..end].chars().count())
}

#[test]
fn the_canonical_text_reads_back_and_is_canonical() {
    let m = manifest();
    let text = m.to_canonical_string();
    let back = Manifest::parse(&text).unwrap();
    assert_eq!(back, m);
    assert!(back.is_canonical_text(text.as_bytes()));
}

#[test]
fn repeated_keys_are_refused_at_every_depth_with_line_and_column() {
    // One repeated key per level of the document, each right after the first occurrence.
    let cases = [
        ("{\"agent\":", "{\"version\":1,\"agent\":", "", "version"),
        ("\"agent\":{\"ceiling\"", "\"agent\":{\"name\":\"x\",\"ceiling\"", "/agent", "name"),
        (
            "\"limits\":{\"confirm_timeout_secs\"",
            "\"limits\":{\"max_iterations\":1,\"confirm_timeout_secs\"",
            "/agent/limits",
            "max_iterations",
        ),
        ("\"skills\":[{\"name\":\"s\"", "\"skills\":[{\"name\":\"s\",\"name\":\"s\"", "/agent/skills/0", "name"),
        (
            "{\"description\":\"The a tool.\"",
            "{\"description\":\"The a tool.\",\"tier\":\"action\"",
            "/tools/0",
            "tier",
        ),
        (
            "\"fs\":{\"read\":[\"/srv/*.json\"],\"write\":[]}",
            "\"fs\":{\"read\":[\"/srv/*.json\"],\"write\":[],\"write\":[\"/etc/**\"]}",
            "/tools/0/policy/fs",
            "write",
        ),
        (
            "\"net\":{\"hosts\":[\"api.example.com:443\"]}",
            "\"net\":{\"hosts\":[\"api.example.com:443\"],\"hosts\":[\"*.evil\"]}",
            "/tools/0/policy/net",
            "hosts",
        ),
        (
            "{\"name\":\"id\",\"secret\":false",
            "{\"name\":\"id\",\"secret\":false,\"secret\":true",
            "/tools/0/parameters/0",
            "secret",
        ),
    ];
    for (needle, with, path, key) in cases {
        // `edit` needs a unique needle: the first tool's entries are made unique by position.
        let text = {
            let t = manifest().to_canonical_string();
            let i = t.find(needle).unwrap_or_else(|| panic!("`{needle}` not in {t}"));
            format!("{}{with}{}", &t[..i], &t[i + needle.len()..])
        };
        // On one line, and spread over lines so that lines other than the first are exercised.
        let spread = pretty_with_repeat(&text);
        assert!(spread.lines().count() > 10);
        for (text, repeated) in [(text.clone(), format!("\"{key}\"")), (spread, format!("\"{key}\""))] {
            let err = Manifest::parse(&text).unwrap_err();
            let (line, column) = match &err {
                ManifestError::DuplicateKey { path: p, key: k, line, column } => {
                    assert_eq!((p.as_str(), k.as_str()), (format!("{path}/{key}").as_str(), key), "{text}");
                    (*line, *column)
                }
                other => panic!("{text}: {other}"),
            };
            let occurrences = text.match_indices(&repeated).count();
            let expected = (0..occurrences).map(|n| end_of(&text, &repeated, n)).find(|p| *p == (line, column));
            assert!(expected.is_some(), "{err} does not point at the end of a `{key}` key in\n{text}");
            assert!(err.to_string().contains(&format!("line {line} column {column}")), "{err}");
        }
    }
}

/// The text pretty-printed by hand: a newline after every `,` and `{` (outside strings, which
/// hold neither here), so that a repeated key keeps its place but lands on a later line.
fn pretty_with_repeat(text: &str) -> String {
    text.replace(",\"", ",\n  \"").replace("{\"", "{\n  \"")
}

#[test]
fn repeated_tool_skill_and_parameter_names_are_refused_with_line_and_column() {
    let text = manifest().to_canonical_string();
    // The second tool renamed to the first tool's name.
    let two_a = text.replacen("\"name\":\"b\"", "\"name\":\"a\"", 1);
    match Manifest::parse(&two_a).unwrap_err() {
        ManifestError::DuplicateName { kind, name, line, column } => {
            assert_eq!((kind, name.as_str()), ("tool", "a"));
            let tools_at = two_a.find("\"tools\"").unwrap();
            let second = two_a[tools_at..].match_indices("\"name\":\"a\"").nth(1).unwrap().0 + tools_at;
            assert_eq!((line, column), (1, second + "\"name\":\"a\"".len()), "{two_a}");
        }
        other => panic!("{other}"),
    }
    let two_a_lines = pretty_with_repeat(&two_a);
    match Manifest::parse(&two_a_lines).unwrap_err() {
        ManifestError::DuplicateName { kind: "tool", line, .. } => assert!(line > 1),
        other => panic!("{other}"),
    }

    let params = text.replacen("\"name\":\"pin\"", "\"name\":\"id\"", 1);
    match Manifest::parse(&params).unwrap_err() {
        ManifestError::DuplicateName { kind, name, .. } => assert_eq!((kind, name.as_str()), ("parameter", "id")),
        other => panic!("{other}"),
    }
    let skills = text.replacen(
        "\"skills\":[{\"name\":\"s\",\"tools\":[\"a\"]}]",
        "\"skills\":[{\"name\":\"s\",\"tools\":[\"a\"]},{\"name\":\"s\",\"tools\":[\"b\"]}]",
        1,
    );
    match Manifest::parse(&skills).unwrap_err() {
        ManifestError::DuplicateName { kind, name, .. } => assert_eq!((kind, name.as_str()), ("skill", "s")),
        other => panic!("{other}"),
    }
    // The same parameter name in two tools is not a repetition.
    assert!(Manifest::parse(&text).is_ok());
}

#[test]
fn refused_policy_entries_and_contradictions_are_refused() {
    for (needle, with) in [
        ("\"/srv/*.json\"", "\"/srv/../etc/*\""),
        ("\"/srv/*.json\"", "\"srv/*.json\""),
        ("\"/srv/*.json\"", "\"/srv/a**\""),
        ("\"api.example.com:443\"", "\"https://api.example.com\""),
        ("\"api.example.com:443\"", "\"127.1\""),
        ("\"REGION\"", "\"REG*\""),
    ] {
        let text = {
            let t = manifest().to_canonical_string();
            t.replacen(needle, with, 1)
        };
        match Manifest::parse(&text) {
            Err(ManifestError::InvalidPolicyEntry { tool, entry, .. }) => {
                assert_eq!(tool, "a");
                assert_eq!(format!("\"{entry}\""), with);
            }
            other => panic!("{with}: {other:?}"),
        }
    }
    let text = edit("\"mutating\":false,\"name\":\"a\"", "\"mutating\":true,\"name\":\"a\"");
    assert!(matches!(Manifest::parse(&text), Err(ManifestError::MutatingMismatch { .. })));
}

#[test]
fn a_text_that_does_not_round_trip_is_read_normalized_and_reported() {
    let m = manifest();
    // Unsorted, repeated list entries and pretty printing: one reading, not canonical.
    let mut v: Value = serde_json::to_value(&m).unwrap();
    v["tools"].as_array_mut().unwrap().reverse();
    v["tools"][1]["policy"]["fs"]["read"] = json!(["/srv/*.json", "/srv/*.json"]);
    let text = serde_json::to_string_pretty(&v).unwrap();
    let read = Manifest::parse(&text).unwrap();
    assert_eq!(read, m);
    assert!(!read.is_canonical_text(text.as_bytes()));
    assert!(read.is_canonical_text(m.to_canonical_string().as_bytes()));
}

#[test]
fn numbers_beyond_exact_range_are_refused() {
    let text = edit("\"max_iterations\":12", "\"max_iterations\":9007199254740993");
    assert!(Manifest::parse(&text).is_err());
}
