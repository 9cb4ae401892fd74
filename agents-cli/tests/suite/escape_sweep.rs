//! Every field the CLI prints, in every subcommand, text and table and JSON: a value holding
//! control, bidirectional and invisible characters and a newline comes out escaped, cannot
//! start a line of its own, and JSON output stays JSON holding the same value.

use crate::common;

use agents_core::Tier;
use agents_core::audit::AuditStatus;
use agents_core::manifest::{Manifest, ParamEntry, SkillEntry};
use agents_core::terminal::is_hidden_or_control;
use common::*;
use serde_json::Value;

/// What each field holds: its tag, an OSC sequence, a carriage return, bidi controls,
/// invisible characters, DEL, a C1 control, a tab, text that looks like an escape, and a
/// newline followed by a line that would pretend to be the program's own.
fn payload(tag: &str) -> String {
    format!("{tag}\u{1b}]0;t\u{7}\r\u{202e}\u{2066}\u{200b}\u{feff}\u{e0041}\u{7f}\u{85}\t\\u{{41}}\nFORGED {tag}")
}

/// What the escaped payload starts with in text output.
fn shown(tag: &str) -> String {
    format!("{tag}\\u{{1b}}]0;t\\u{{7}}\\u{{d}}\\u{{202e}}")
}

/// A manifest with the payload in every string field that may hold any text.
fn hostile_manifest() -> Manifest {
    let base = helpdesk_v1();
    let mut agent = base.agent.clone();
    agent.name = payload("agent-name");
    agent.description = payload("agent-description");
    agent.input = payload("agent-input");
    agent.output = payload("agent-output");
    agent.ceiling = Some(vec![payload("ceiling"), "public".into()]);
    let mut tools = base.tools.clone();
    for t in &mut tools {
        let n = t.name.clone();
        t.name = payload(&format!("tool-{n}"));
        t.description = payload(&format!("description-{n}"));
        t.permission = payload(&format!("permission-{n}"));
        if t.tier == Tier::Action {
            t.title = Some(payload(&format!("title-{n}")));
        }
        t.policy.fs.read = vec![format!("/r/{}", payload(&format!("fs-read-{n}")))];
        t.policy.fs.write = vec![format!("/w/{}", payload(&format!("fs-write-{n}")))];
        t.parameters = vec![ParamEntry {
            name: payload(&format!("param-{n}")),
            rust_type: payload(&format!("type-{n}")),
            secret: false,
        }];
        t.uses = vec![payload(&format!("uses-{n}"))];
    }
    agent.skills = vec![SkillEntry { name: payload("skill"), tools: vec![payload("tool-lookup_policy")], io: None }];
    Manifest::from_entries(agent, tools).unwrap()
}

/// Records with the payload in every string field, sealed into a valid chain: a run with an
/// action executed without approval (a severe failure that names run, call and tool).
fn hostile_log() -> String {
    let mut records = Vec::new();
    for (i, status) in [AuditStatus::RunStarted, AuditStatus::Proposed, AuditStatus::Executed, AuditStatus::Denied]
        .into_iter()
        .enumerate()
    {
        let mut r = call(status, &payload("rec-tool"), Tier::Action, &payload("rec-call"), &payload("rec-args-hash"));
        r.ts = payload("rec-ts");
        r.run_id = payload("rec-run").into();
        r.session_id = payload("rec-session").into();
        r.request_id = payload("rec-request").into();
        r.user_id = payload("rec-user").into();
        r.org_id = payload("rec-org").into();
        r.role = payload("rec-role").into();
        r.agent = payload("rec-agent").into();
        r.reason = (i % 2 == 1).then(|| payload("rec-reason"));
        r.title = (i % 2 == 0).then(|| payload("rec-title").into());
        r.manifest_sha256 = payload(&format!("rec-manifest-{i}")).into();
        records.push(r);
    }
    seal_chain(records)
}

/// Checks one output stream: no raw hidden or control character but the program's own
/// newlines, no line that a value started, and (for JSON) still JSON.
fn check(what: &str, text: &str, json: bool) {
    if let Some(c) = text.chars().find(|c| *c != '\n' && is_hidden_or_control(*c)) {
        panic!("{what}: raw {c:?} in the output:\n{text}");
    }
    if let Some(line) = text.lines().find(|l| l.trim_start().starts_with("FORGED")) {
        panic!("{what}: a value started its own line `{line}`:\n{text}");
    }
    if json && !text.trim().is_empty() {
        let whole = serde_json::from_str::<Value>(text);
        let values: Vec<Value> = match whole {
            Ok(v) => vec![v],
            Err(_) => text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {l}")))
                .collect(),
        };
        assert!(values.iter().any(holds_payload), "{what}: the JSON no longer holds the values:\n{text}");
    }
}

fn holds_payload(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("\u{202e}\u{2066}\u{200b}") && s.contains("\nFORGED"),
        Value::Array(a) => a.iter().any(holds_payload),
        Value::Object(o) => o.values().any(holds_payload),
        _ => false,
    }
}

/// Runs a command and checks both streams; returns standard output.
fn run(args: &[&std::ffi::OsStr], json: bool) -> String {
    let o = agents(args);
    let what = format!("agents {}", args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" "));
    let what = agents_core::terminal::escape(&what).into_owned();
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(code(&o) != 101 && !err.contains("panicked"), "{what} panicked: {err}");
    check(&format!("{what} (stdout)"), &out, json);
    check(&format!("{what} (stderr)"), &err, false);
    format!("{out}{err}")
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

fn assert_shows(what: &str, output: &str, tags: &[String]) {
    for tag in tags {
        assert!(output.contains(&shown(tag)), "{what}: `{tag}` is not shown escaped:\n{output}");
    }
}

#[test]
fn every_manifest_subcommand_escapes_every_field() {
    let dir = tempdir();
    let m = hostile_manifest();
    let text = m.to_canonical_string();
    assert!(Manifest::parse(&text).is_ok(), "the hostile manifest must be readable");
    // A file name that holds the payload too (any byte but `/` and NUL is allowed).
    let name = format!("m-{}.json", payload("file").replace('/', "_"));
    let hostile = write(dir.path(), &name, &text);
    let pretty = write(dir.path(), "pretty.json", &serde_json::to_string_pretty(&m).unwrap());
    let plain = write(dir.path(), "v1.json", &helpdesk_v1().to_canonical_string());
    let (h, p, v1) = (hostile.as_os_str(), pretty.as_os_str(), plain.as_os_str());

    let tool_tags: Vec<String> = m.tools.iter().map(|t| t.name.split('\u{1b}').next().unwrap().to_owned()).collect();
    let mut every: Vec<String> = ["agent-name", "agent-description", "agent-input", "agent-output", "ceiling", "skill"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    every.push("file".into());
    for t in &tool_tags {
        let n = t.trim_start_matches("tool-");
        every.extend(
            ["tool", "description", "permission", "fs-read", "fs-write", "param", "type", "uses"]
                .iter()
                .map(|f| format!("{f}-{n}")),
        );
    }

    let show = run(&[os("manifest"), os("show"), h], false);
    // `show` names no file; descriptions are checked below.
    let show_fields: Vec<String> =
        every.iter().filter(|t| !t.starts_with("description-") && *t != "file").cloned().collect();
    assert_shows("manifest show", &show, &show_fields);
    // Descriptions are clipped, but each begins escaped.
    for t in every.iter().filter(|t| t.starts_with("description-")) {
        assert!(show.contains(&format!("{t}\\u{{1b}}")), "manifest show: `{t}`:\n{show}");
    }

    // Widening from v1 to the hostile manifest: every new tool and entry is named.
    let diff = run(&[os("manifest"), os("diff"), v1, h], false);
    assert_shows("manifest diff", &diff, &tool_tags);
    assert_shows("manifest diff", &diff, &["agent-name".into(), "ceiling".into(), "file".into()]);
    let back = run(&[os("manifest"), os("diff"), h, v1], false);
    assert_shows("manifest diff (reverse)", &back, &tool_tags);
    run(&[os("manifest"), os("diff"), v1, h, os("--json")], true);
    run(&[os("manifest"), os("diff"), p, h], false);
    let verify = run(&[os("manifest"), os("verify"), v1, h], false);
    assert_shows("manifest verify", &verify, &tool_tags);
    run(&[os("manifest"), os("verify"), h, h], false);
    run(&[os("manifest"), os("verify"), p, h], false);
    run(&[os("manifest"), os("hash"), h], false);
    let out_html = dir.path().join(format!("r-{}.html", payload("html").replace('/', "_")));
    run(&[os("manifest"), os("render"), h, os("--diff"), v1, os("-o"), out_html.as_os_str()], false);

    // Refusals quote what they refuse: a repeated tool name, a refused glob.
    let dup = text.replacen(
        &format!("\"name\":{}", serde_json::to_string(&m.tools[1].name).unwrap()),
        &format!("\"name\":{}", serde_json::to_string(&m.tools[0].name).unwrap()),
        1,
    );
    let dup_file = write(dir.path(), "dup.json", &dup);
    let refused = run(&[os("manifest"), os("show"), dup_file.as_os_str()], false);
    assert!(refused.contains("two tools are named"), "{refused}");
    assert_shows("manifest show (repeated name)", &refused, &[tool_tags[0].clone()]);
    let bad_glob = text.replacen("/r/", "/r/[", 1);
    let bad_file = write(dir.path(), "bad.json", &bad_glob);
    let refused = run(&[os("manifest"), os("diff"), v1, bad_file.as_os_str()], false);
    assert!(refused.contains("is refused"), "{refused}");
}

#[test]
fn every_audit_subcommand_escapes_every_field() {
    let dir = tempdir();
    let log = hostile_log();
    let name = format!("log-{}.jsonl", payload("file").replace('/', "_"));
    let path = write(dir.path(), &name, &log);
    let l = path.as_os_str();
    let manifest = write(dir.path(), "m.json", &hostile_manifest().to_canonical_string());
    let m = manifest.as_os_str();
    // A broken chain: the second record's tool changed after sealing.
    let broken_text = {
        let mut lines: Vec<String> = log.lines().map(str::to_owned).collect();
        lines[1] = lines[1].replacen("rec-tool", "rec-tool-changed", 1);
        lines.join("\n") + "\n"
    };
    let broken = write(dir.path(), "broken.jsonl", &broken_text);
    let b = broken.as_os_str();

    let record_tags: Vec<String> =
        ["rec-tool", "rec-call", "rec-ts", "rec-run", "rec-user", "rec-role"].iter().map(|s| (*s).to_owned()).collect();

    let show = run(&[os("audit"), os("show"), l], false);
    assert_shows("audit show", &show, &record_tags);
    assert_shows("audit show", &show, &["rec-reason".into(), "rec-title".into()]);
    run(&[os("audit"), os("show"), l, os("--json")], true);
    run(&[os("audit"), os("show"), b], false);

    let verify = run(&[os("audit"), os("verify"), l], false);
    assert_shows("audit verify", &verify, &["file".into(), "rec-manifest-0".into()]);
    run(&[os("audit"), os("verify"), l, os("--json")], true);
    run(&[os("audit"), os("verify"), b], false);
    run(&[os("audit"), os("verify"), b, os("--json")], false);
    run(&[os("audit"), os("verify"), l, os("--manifest"), m], false);

    let stats = run(&[os("audit"), os("stats"), l], false);
    assert_shows("audit stats", &stats, &["rec-run".into(), "rec-call".into(), "rec-tool".into()]);
    run(&[os("audit"), os("stats"), l, os("--json")], true);
    run(&[os("audit"), os("stats"), b, os("--manifest"), m], false);
    run(&[os("audit"), os("stats"), b, os("--json")], false);
}
