//! `agents manifest show|diff|verify|hash|render` on a composite's graph manifest, through the
//! real binary: the commands read the `format` and take the composite's path; bad input (torn
//! JSON, a wrong format, a tampered hash, a composite compared with an agent) stops with exit 2
//! or is a finding (exit 1), never a silent pass.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const SHA_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const SHA_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// A KYC pipeline: a loop over a forum whose member (intake, read) hands to a guarded reviewer
/// (action).
pub fn kyc() -> Value {
    json!({
        "capabilities": {"actions": ["approve"], "handoffs": [], "permissions": ["kyc.read", "kyc.write"], "tools": ["approve", "lookup"]},
        "composite": {"description": "Reviews a KYC request.", "input": "RawRequest", "name": "kyc-pipeline", "output": "ApprovalDecision"},
        "edges": [
            {"from": "again", "kind": "body", "to": "panel"},
            {"from": "guard", "kind": "inner", "to": "review"},
            {"from": "intake", "kind": "then", "to": "guard"},
            {"from": "panel", "kind": "member", "to": "intake"},
        ],
        "format": "agents.composite-manifest",
        "nodes": [
            {"id": "again", "kind": "loop", "max_iterations": 3},
            {"id": "guard", "kind": "wrap", "steps": ["rate_limit", "redact"]},
            {"actions": [], "agent": "kyc-intake", "handoffs": [], "id": "intake", "kind": "agent", "manifest_sha256": SHA_A,
             "permissions": ["kyc.read"], "reaches": "read", "tools": ["lookup"]},
            {"id": "panel", "kind": "forum", "rounds": 2},
            {"actions": ["approve"], "agent": "kyc-reviewer", "handoffs": [], "id": "review", "kind": "agent", "manifest_sha256": SHA_B,
             "permissions": ["kyc.write"], "reaches": "action", "tools": ["approve"]},
        ],
        "version": 1
    })
}

pub fn put(dir: &Path, name: &str, v: &Value) -> PathBuf {
    write(dir, name, &agents_core::canonical::to_string(v))
}

fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let mut all = vec!["manifest".as_ref()];
    all.extend_from_slice(args);
    let o = agents(all);
    (code(&o), stdout(&o), stderr(&o))
}

#[test]
fn show_lists_the_composite_its_nodes_and_edges() {
    let dir = tempdir();
    let p = put(dir.path(), "kyc.json", &kyc());
    let (c, out, err) = run(&["show".as_ref(), p.as_os_str()]);
    assert_eq!(c, 0, "{err}");
    let sha = agents_core::canonical::sha256_hex(&std::fs::read(&p).unwrap());
    for needle in
        ["kyc-pipeline", sha.as_str(), "canonical (sha256sum", "NODES", "EDGES", "kyc-reviewer", "inner", "approve"]
    {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    // The loop reaches the reviewer's action through forum, intake and guard.
    assert!(out.lines().any(|l| l.starts_with("again") && l.contains("action")), "{out}");
}

#[test]
fn diff_exits_1_on_a_widening_and_0_on_a_narrowing() {
    let dir = tempdir();
    let old = put(dir.path(), "v1.json", &kyc());
    let mut wider = kyc();
    wider["nodes"][0]["max_iterations"] = json!(5);
    let wider = put(dir.path(), "v2.json", &wider);
    let (c, out, err) = run(&["diff".as_ref(), old.as_os_str(), wider.as_os_str()]);
    assert_eq!(c, 1, "{out}{err}");
    assert!(out.contains("node `again` max_iterations: max_iterations raised from 3 to 5"), "{out}");
    assert!(out.contains("result: a run of the new composite may reach MORE"), "{out}");
    let (c, out, _) = run(&["diff".as_ref(), wider.as_os_str(), old.as_os_str()]);
    assert_eq!(c, 0, "{out}");
    assert!(out.contains("NARROWING") && out.contains("result: no widening"), "{out}");
}

#[test]
fn diff_json_names_the_node_of_each_change() {
    let dir = tempdir();
    let old = put(dir.path(), "v1.json", &kyc());
    let mut v = kyc();
    v["nodes"].as_array_mut().unwrap().remove(1);
    v["edges"].as_array_mut().unwrap().retain(|e| e["from"] != "guard" && e["to"] != "guard");
    v["edges"].as_array_mut().unwrap().push(json!({"from": "intake", "kind": "then", "to": "review"}));
    let new = put(dir.path(), "v2.json", &v);
    let (c, out, err) = run(&["diff".as_ref(), old.as_os_str(), new.as_os_str(), "--json".as_ref()]);
    assert_eq!(c, 1, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let rules: Vec<(&str, &str, &str)> = j["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["kind"].as_str().unwrap(), c["rule"].as_str().unwrap(), c["node"].as_str().unwrap_or("")))
        .collect();
    assert!(rules.contains(&("widening", "guard_removed", "guard")), "{rules:?}");
    assert!(rules.contains(&("widening", "edge_added", "intake")), "{rules:?}");
}

/// A changed agent node hash: a widening nobody inspected, until both node manifests are
/// given; then the agent diff decides (here a reworded description: neutral).
#[test]
fn node_manifests_let_the_agent_diff_classify_a_changed_node() {
    let dir = tempdir();
    let v1 = helpdesk_v1();
    let mut v1b = v1.clone();
    v1b.agent.description.push_str(" Now in two languages.");
    let (m1, m2) = (
        write(dir.path(), "a1.json", &v1.to_canonical_string()),
        write(dir.path(), "a2.json", &v1b.to_canonical_string()),
    );
    let with = |sha: String| {
        let mut v = kyc();
        v["nodes"][4]["manifest_sha256"] = json!(sha);
        v
    };
    let old = put(dir.path(), "c1.json", &with(v1.sha256()));
    let new = put(dir.path(), "c2.json", &with(v1b.sha256()));
    let (c, out, _) = run(&["diff".as_ref(), old.as_os_str(), new.as_os_str()]);
    assert_eq!(c, 1, "{out}");
    assert!(out.contains("not inspected: give the node manifests"), "{out}");
    let flag = "--node-manifest".as_ref();
    let (c, out, err) =
        run(&["diff".as_ref(), old.as_os_str(), new.as_os_str(), flag, m1.as_os_str(), flag, m2.as_os_str()]);
    assert_eq!(c, 0, "{out}{err}");
    assert!(out.contains("node `review` description"), "{out}");
}

#[test]
fn verify_passes_on_identical_bytes_and_fails_on_a_tampered_node_hash() {
    let dir = tempdir();
    let base = put(dir.path(), "base.json", &kyc());
    let same = put(dir.path(), "same.json", &kyc());
    let (c, out, _) = run(&["verify".as_ref(), base.as_os_str(), same.as_os_str()]);
    assert_eq!(c, 0, "{out}");
    assert!(out.starts_with("OK:"), "{out}");
    let mut tampered = kyc();
    tampered["nodes"][4]["manifest_sha256"] = json!(SHA_A);
    let tampered = put(dir.path(), "tampered.json", &tampered);
    let (c, out, _) = run(&["verify".as_ref(), base.as_os_str(), tampered.as_os_str()]);
    assert_eq!(c, 1, "{out}");
    assert!(out.contains("MISMATCH") && out.contains("node `review` manifest_sha256"), "{out}");
}

#[test]
fn verify_checks_the_expected_hash_and_a_canonical_baseline() {
    let dir = tempdir();
    let base = put(dir.path(), "base.json", &kyc());
    let sha = agents_core::canonical::sha256_hex(&std::fs::read(&base).unwrap());
    let (c, out, _) = run(&["verify".as_ref(), base.as_os_str(), base.as_os_str(), "--sha256".as_ref(), sha.as_ref()]);
    assert_eq!(c, 0, "{out}");
    let (c, out, _) =
        run(&["verify".as_ref(), base.as_os_str(), base.as_os_str(), "--sha256".as_ref(), SHA_A.as_ref()]);
    assert_eq!(c, 1, "{out}");
    assert!(out.contains("HASH MISMATCH"), "{out}");
    let pretty = write(dir.path(), "pretty.json", &serde_json::to_string_pretty(&kyc()).unwrap());
    let (c, out, _) = run(&["verify".as_ref(), pretty.as_os_str(), pretty.as_os_str()]);
    assert_eq!(c, 1, "{out}");
    assert!(out.contains("BASELINE NOT CANONICAL"), "{out}");
}

#[test]
fn hash_is_what_sha256sum_prints() {
    let dir = tempdir();
    let p = put(dir.path(), "kyc.json", &kyc());
    let (c, out, _) = run(&["hash".as_ref(), p.as_os_str()]);
    assert_eq!(c, 0);
    assert_eq!(out.trim(), agents_core::canonical::sha256_hex(&std::fs::read(&p).unwrap()));
}

#[test]
fn render_draws_nodes_by_tier_and_edges_by_kind_escaped() {
    let dir = tempdir();
    let old = put(dir.path(), "v1.json", &kyc());
    let mut v = kyc();
    v["composite"]["description"] = json!("<script>alert(1)</script>");
    v["nodes"][3]["rounds"] = json!(4);
    let new = put(dir.path(), "v2.json", &v);
    let out = dir.path().join("r.html");
    let (c, stdout, err) =
        run(&["render".as_ref(), new.as_os_str(), "--diff".as_ref(), old.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(c, 0, "{stdout}{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains(r#"id="composite-graph""#) && html.contains(r#"id="changes-table""#));
    assert!(!html.contains("<script>") && html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"), "{html}");
    let node = |id: &str| {
        let at = html.find(&format!(r#"data-node="{id}""#)).unwrap_or_else(|| panic!("no node {id}"));
        html[..at].rsplit("<g ").next().unwrap().to_owned() + &html[at..at + 400]
    };
    assert!(node("review").contains("reaches-action") && node("review").contains("#fef3c7"));
    assert!(node("intake").contains("reaches-action"), "intake hands on to the guarded reviewer");
    assert!(node("panel").contains("stroke-dasharray"), "the forum whose rounds rose is outlined");
    for kind in ["body", "inner", "then", "member"] {
        assert!(html.contains(&format!(r##"fill="#475569">{kind}</text>"##)), "no edge labelled {kind}");
    }
}

#[test]
fn torn_json_is_refused_with_exit_2() {
    let dir = tempdir();
    let text = agents_core::canonical::to_string(&kyc());
    let p = write(dir.path(), "torn.json", &text[..text.len() - 40]);
    for cmd in ["show", "hash"] {
        let (c, _, err) = run(&[cmd.as_ref(), p.as_os_str()]);
        assert_eq!(c, 2, "{cmd}: {err}");
        assert!(err.contains("not a valid composite manifest") && err.contains("cut short"), "{err}");
    }
}

#[test]
fn a_wrong_format_string_is_refused_and_names_both_formats() {
    let dir = tempdir();
    let mut v = kyc();
    v["format"] = json!("agents.composite-manifest-draft");
    let p = put(dir.path(), "draft.json", &v);
    let (c, _, err) = run(&["show".as_ref(), p.as_os_str()]);
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains("`agents.composite-manifest-draft`")
            && err.contains("`agents.composite-manifest` for a composite"),
        "{err}"
    );
}

#[test]
fn a_contradictory_composite_is_refused_with_where_and_what_to_do() {
    let dir = tempdir();
    let mut v = kyc();
    v["nodes"][4]["reaches"] = json!("read");
    let p = put(dir.path(), "lying.json", &v);
    let (c, _, err) = run(&["show".as_ref(), p.as_os_str()]);
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("nodes (id `review`).reaches"), "{err}");
    assert!(err.contains("regenerate it"), "{err}");
}

#[test]
fn a_composite_is_not_compared_with_an_agent() {
    let dir = tempdir();
    let c1 = put(dir.path(), "c.json", &kyc());
    let agent = fixture("helpdesk-v1.json");
    for (a, b) in [(&c1, &agent), (&agent, &c1)] {
        let (c, _, err) = run(&["diff".as_ref(), a.as_os_str(), b.as_os_str()]);
        assert_eq!(c, 2, "{err}");
        assert!(err.contains("is a composite manifest") || err.contains("is not a composite manifest"), "{err}");
    }
    let (c, _, err) =
        run(&["diff".as_ref(), agent.as_os_str(), agent.as_os_str(), "--node-manifest".as_ref(), agent.as_os_str()]);
    assert_eq!(c, 2, "{err}");
}

/// A value holding an escape sequence, bidi controls, invisible characters and a newline that
/// would start a forged line.
fn hostile(tag: &str) -> String {
    format!("{tag}\u{1b}]0;t\u{7}\r\u{202e}\u{200b}\nFORGED {tag}")
}

fn assert_clean(what: &str, text: &str) {
    let raw = text.chars().find(|c| *c != '\n' && agents_core::terminal::is_hidden_or_control(*c));
    assert!(raw.is_none(), "{what}: raw {raw:?} in:\n{text}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with("FORGED")), "{what}: a forged line in:\n{text}");
}

/// Every name a composite holds (its name, description, types, node ids, agent names, tools,
/// joins, steps) comes out escaped from every command, and refusals quote it escaped too.
#[test]
fn every_composite_field_is_escaped_in_every_command() {
    let dir = tempdir();
    let mut v = kyc();
    for (field, tag) in [("name", "c-name"), ("description", "c-desc"), ("input", "c-in"), ("output", "c-out")] {
        v["composite"][field] = json!(hostile(tag));
    }
    let id = hostile("node-id");
    v["nodes"][2]["id"] = json!(id);
    v["nodes"][2]["agent"] = json!(hostile("agent"));
    v["nodes"][2]["tools"] = json!([hostile("tool")]);
    v["capabilities"]["tools"] = json!(["approve", hostile("tool")]);
    v["nodes"][1]["steps"] = json!([hostile("step")]);
    for e in v["edges"].as_array_mut().unwrap() {
        for end in ["from", "to"] {
            if e[end] == "intake" {
                e[end] = json!(id);
            }
        }
    }
    let h = put(dir.path(), "hostile.json", &v);
    let plain = put(dir.path(), "plain.json", &kyc());
    let out_html = dir.path().join("r.html");
    let (h, p) = (h.as_os_str(), plain.as_os_str());
    let runs: [Vec<&std::ffi::OsStr>; 7] = [
        vec!["show".as_ref(), h],
        vec!["diff".as_ref(), p, h],
        vec!["diff".as_ref(), h, p],
        vec!["diff".as_ref(), p, h, "--json".as_ref()],
        vec!["verify".as_ref(), p, h],
        vec!["hash".as_ref(), h],
        vec!["render".as_ref(), h, "--diff".as_ref(), p, "-o".as_ref(), out_html.as_os_str()],
    ];
    for args in runs {
        let (c, out, err) = run(&args);
        let what = format!("{:?}", args.first());
        assert!(c == 0 || c == 1, "{what}: {err}");
        assert_clean(&what, &out);
        assert_clean(&what, &err);
    }
    let (_, show, _) = run(&["show".as_ref(), h]);
    for tag in ["c-name", "node-id", "agent", "tool", "step"] {
        assert!(show.contains(&format!("{tag}\\u{{1b}}]0;t")), "show: `{tag}` not shown escaped:\n{show}");
    }
    let mut lying = v.clone();
    lying["nodes"][2]["reaches"] = json!("none");
    let lying = put(dir.path(), "lying.json", &lying);
    let (c, out, err) = run(&["show".as_ref(), lying.as_os_str()]);
    assert_eq!(c, 2);
    assert_clean("refusal", &format!("{out}{err}"));
    assert!(err.contains("(id `node-id\\u{1b}]0;t"), "{err}");
}

/// Composite text cannot add markup to the report, and the page fetches nothing: the hostile
/// report has exactly as many tag and attribute delimiters as the same report of plain text.
#[test]
fn composite_text_cannot_add_markup_to_the_report() {
    let dir = tempdir();
    let render = |name: &str, text: &str| {
        let mut v = kyc();
        v["composite"]["name"] = json!(format!("n{text}"));
        v["composite"]["description"] = json!(format!("d{text}"));
        v["nodes"][1]["steps"] = json!([format!("s{text}")]);
        v["nodes"][4]["agent"] = json!(format!("a{text}"));
        let file = put(dir.path(), &format!("{name}.json"), &v);
        let old = put(dir.path(), "old.json", &kyc());
        let out = dir.path().join(format!("{name}.html"));
        let (c, _, err) = run(&[
            "render".as_ref(),
            file.as_os_str(),
            "--diff".as_ref(),
            old.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        assert_eq!(c, 0, "{err}");
        std::fs::read_to_string(out).unwrap()
    };
    let markup = r#"<img src=x onerror=alert(2)>"' onmouseover='alert(1)'<script>alert(3)</script>"#;
    let plain = render("plain", &" plain text ".repeat(4));
    let hostile = render("hostile", markup);
    for c in ['<', '>', '"', '\''] {
        assert_eq!(hostile.matches(c).count(), plain.matches(c).count(), "composite text added `{c}` to the page");
    }
    crate::manifest::assert_no_external_references(&plain);
    assert!(hostile.contains("&#60;script&#62;alert(3)&#60;/script&#62;"), "the text is there, as text");
}

/// A node manifest edited after the fact does not match the hash the composite pins, so it is
/// not used: the changed node stays a widening "not inspected".
#[test]
fn an_edited_node_manifest_is_not_used_to_classify() {
    let dir = tempdir();
    let (v1, mut v2) = (helpdesk_v1(), helpdesk_v1());
    v2.agent.description.push_str(" Reworded.");
    let with = |sha: String| {
        let mut v = kyc();
        v["nodes"][4]["manifest_sha256"] = json!(sha);
        v
    };
    let old = put(dir.path(), "c1.json", &with(v1.sha256()));
    let new = put(dir.path(), "c2.json", &with(v2.sha256()));
    let m1 = write(dir.path(), "a1.json", &v1.to_canonical_string());
    // The "new" manifest the reviewer is handed claims fewer limits than the one pinned.
    let mut forged = v2.clone();
    forged.agent.limits.max_iterations = 1;
    let m2 = write(dir.path(), "a2.json", &forged.to_canonical_string());
    let flag = "--node-manifest".as_ref();
    let (c, out, err) =
        run(&["diff".as_ref(), old.as_os_str(), new.as_os_str(), flag, m1.as_os_str(), flag, m2.as_os_str()]);
    assert_eq!(c, 1, "{out}{err}");
    assert!(out.contains(&format!("not inspected: give the node manifests (missing sha256 {})", v2.sha256())), "{out}");
}
