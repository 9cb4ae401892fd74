//! `agents manifest ...` through the real binary.

use crate::common;

use common::*;
use serde_json::Value;

/// The committed fixtures are exactly what the builders produce (checked with the baseline
/// gate itself; `AGENTS_BLESS=1 cargo test -p agents-cli` rewrites them).
#[test]
fn fixtures_match_the_builders() {
    agents_core::baseline::assert_baseline(&helpdesk_v1().to_canonical_string(), fixture("helpdesk-v1.json"));
    agents_core::baseline::assert_baseline(&helpdesk_v2().to_canonical_string(), fixture("helpdesk-v2.json"));
}

#[test]
fn show_summarizes_agent_tools_and_policies() {
    let o = agents(["manifest".as_ref(), "show".as_ref(), fixture("helpdesk-v1.json").as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = stdout(&o);
    for needle in [
        "helpdesk",
        &helpdesk_v1().sha256(),
        "canonical",
        "5 (2 read, 2 action, 1 handoff)",
        "reset_password",
        "otp: String (secret)",
        "/srv/helpdesk/policies/*.md",
        "tickets.internal.example:443",
        "TICKETS_API_TOKEN",
        "12 iterations",
        "leave [get_leave_balance, submit_leave]",
    ] {
        assert!(s.contains(needle), "missing {needle:?} in:\n{s}");
    }
}

/// A browsing tool's `*` (any host), new against a baseline without it: a widening that says
/// it is any host, and exit 1 (the CI gate fails).
#[test]
fn any_host_added_is_a_widening_that_says_so() {
    let dir = tempdir();
    let mut browsing = helpdesk_v1();
    let t = browsing.tools.iter_mut().find(|t| t.policy.net.hosts.is_empty()).expect("a tool without net hosts");
    let name = t.name.clone();
    t.policy.net.hosts = vec!["*".into()];
    let p = write(dir.path(), "browsing.json", &browsing.to_canonical_string());
    let v1 = fixture("helpdesk-v1.json");
    let o = agents(["manifest".as_ref(), "diff".as_ref(), v1.as_os_str(), p.as_os_str()]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("1 widening, 0 narrowing, 0 neutral"), "{s}");
    assert!(s.contains(&format!("tool `{name}` policy.net.hosts: network host `*` added (any host")), "{s}");
}

#[test]
fn diff_exits_1_on_widening_and_0_otherwise() {
    let (v1, v2) = (fixture("helpdesk-v1.json"), fixture("helpdesk-v2.json"));
    let o = agents(["manifest".as_ref(), "diff".as_ref(), v1.as_os_str(), v2.as_os_str()]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("WIDENING:") && s.contains("NARROWING:") && s.contains("NEUTRAL:"), "{s}");
    assert!(s.contains("tool `export_directory`: new tool"), "{s}");
    assert!(s.contains("broadened from `/srv/helpdesk/policies/*.md` to `/srv/helpdesk/**`"), "{s}");
    assert!(s.contains("WIDENS"), "{s}");

    // The reverse direction narrows, but restores an environment variable: still exit 1.
    let o = agents(["manifest".as_ref(), "diff".as_ref(), v2.as_os_str(), v1.as_os_str()]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("1 widening, 5 narrowing, 2 neutral"), "{}", stdout(&o));

    // Narrowing only: exit 0.
    let dir = tempdir();
    let mut narrower = helpdesk_v1();
    let t = narrower.tools.iter_mut().find(|t| t.name == "open_ticket").unwrap();
    t.policy.env.vars.clear();
    t.risk = agents_core::Risk::High;
    let p = write(dir.path(), "narrower.json", &narrower.to_canonical_string());
    let o = agents(["manifest".as_ref(), "diff".as_ref(), v1.as_os_str(), p.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("0 widening, 3 narrowing, 0 neutral"), "{}", stdout(&o));
    assert!(stdout(&o).contains("result: no widening"));

    // Identical manifests: exit 0.
    let o = agents(["manifest".as_ref(), "diff".as_ref(), v1.as_os_str(), v1.as_os_str()]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("no capability or description differences"));

    // A neutral-only change (a description) exits 0 but is shown.
    let mut m = helpdesk_v1();
    m.tools[0].description = "Reworded.".into();
    let p = write(dir.path(), "reworded.json", &m.to_canonical_string());
    let o = agents(["manifest".as_ref(), "diff".as_ref(), v1.as_os_str(), p.as_os_str()]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("NEUTRAL:") && stdout(&o).contains("Reworded."), "{}", stdout(&o));
}

#[test]
fn diff_json_parses_and_classifies() {
    let (v1, v2) = (fixture("helpdesk-v1.json"), fixture("helpdesk-v2.json"));
    let o = agents(["manifest".as_ref(), "diff".as_ref(), v1.as_os_str(), v2.as_os_str(), "--json".as_ref()]);
    assert_eq!(code(&o), 1);
    let v: Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    assert_eq!(v["has_widening"], true);
    assert_eq!(v["old"]["sha256"], helpdesk_v1().sha256());
    assert_eq!(v["new"]["sha256"], helpdesk_v2().sha256());
    let changes = v["changes"].as_array().unwrap();
    let rules: Vec<(&str, &str)> =
        changes.iter().map(|c| (c["kind"].as_str().unwrap(), c["rule"].as_str().unwrap())).collect();
    for expected in [
        ("widening", "tool_added"),
        ("widening", "ceiling_raised"),
        ("widening", "policy_broadened"),
        ("widening", "risk_lowered"),
        ("widening", "secret_removed"),
        ("narrowing", "policy_removed"),
        ("neutral", "description_changed"),
        ("neutral", "skills_changed"),
    ] {
        assert!(rules.contains(&expected), "missing {expected:?} in {rules:?}");
    }
    let widening = changes.iter().filter(|c| c["kind"] == "widening").count();
    assert_eq!(v["summary"]["widening"], widening);
}

#[test]
fn hash_equals_sha256_of_the_file_bytes() {
    use sha2::Digest;
    let path = fixture("helpdesk-v1.json");
    let o = agents(["manifest".as_ref(), "hash".as_ref(), path.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let printed = stdout(&o).trim().to_owned();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(printed, hex::encode(sha2::Sha256::digest(&bytes)));
    assert_eq!(printed, helpdesk_v1().sha256(), "a canonical file hashes to MANIFEST_SHA256");
    if let Ok(out) = std::process::Command::new("sha256sum").arg(&path).output() {
        let line = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(line.split_whitespace().next(), Some(printed.as_str()));
    }

    // A pretty-printed manifest: the file's hash, plus a note with the canonical one.
    let dir = tempdir();
    let pretty = serde_json::to_string_pretty(&helpdesk_v1()).unwrap();
    let p = write(dir.path(), "pretty.json", &pretty);
    let o = agents(["manifest".as_ref(), "hash".as_ref(), p.as_os_str()]);
    assert_eq!(code(&o), 0);
    assert_eq!(stdout(&o).trim(), hex::encode(sha2::Sha256::digest(pretty.as_bytes())));
    assert!(stderr(&o).contains("not in canonical form") && stderr(&o).contains(&helpdesk_v1().sha256()));
}

#[test]
fn verify_passes_on_identical_files_and_fails_on_any_difference() {
    let (v1, v2) = (fixture("helpdesk-v1.json"), fixture("helpdesk-v2.json"));
    let dir = tempdir();
    let copy = write(dir.path(), "current.json", &std::fs::read_to_string(&v1).unwrap());
    let o = agents(["manifest".as_ref(), "verify".as_ref(), v1.as_os_str(), copy.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).starts_with("OK:"));

    let o = agents(["manifest".as_ref(), "verify".as_ref(), v1.as_os_str(), v2.as_os_str()]);
    assert_eq!(code(&o), 1);
    let s = stdout(&o);
    assert!(s.starts_with("MISMATCH:") && s.contains("WIDENING:") && s.contains("AGENTS_BLESS=1"), "{s}");

    // Narrowing or neutral changes still fail verification: any difference does.
    let dir2 = tempdir();
    let mut reworded = helpdesk_v1();
    reworded.tools[0].description = "Reworded.".into();
    let p = write(dir2.path(), "reworded.json", &reworded.to_canonical_string());
    let o = agents(["manifest".as_ref(), "verify".as_ref(), v1.as_os_str(), p.as_os_str()]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("NEUTRAL:") && !stdout(&o).contains("WIDENS"), "{}", stdout(&o));

    // Same content, different bytes.
    let nl = write(dir.path(), "newline.json", &format!("{}\n", std::fs::read_to_string(&v1).unwrap()));
    let o = agents(["manifest".as_ref(), "verify".as_ref(), v1.as_os_str(), nl.as_os_str()]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("not byte-identical"), "{}", stdout(&o));
}

#[test]
fn clear_errors_for_missing_and_wrong_files() {
    let dir = tempdir();
    let missing = dir.path().join("nope.json");
    for sub in ["show", "hash"] {
        let o = agents(["manifest".as_ref(), sub.as_ref(), missing.as_os_str()]);
        assert_eq!(code(&o), 2);
        let e = stderr(&o);
        assert!(e.contains("cannot read manifest") && e.contains("nope.json") && e.contains("no such file"), "{e}");
        assert!(e.contains("hint:"), "{e}");
    }

    let text = write(dir.path(), "notes.txt", "just some notes\n");
    let o = agents(["manifest".as_ref(), "show".as_ref(), text.as_os_str()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("is not a permission manifest"), "{}", stderr(&o));

    let json = write(dir.path(), "other.json", r#"{"name": "x"}"#);
    let o = agents(["manifest".as_ref(), "show".as_ref(), json.as_os_str()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("is not a permission manifest: no `format` field"), "{}", stderr(&o));

    let mut v: Value = serde_json::to_value(helpdesk_v1()).unwrap();
    v["version"] = 2.into();
    let v2 = write(dir.path(), "v2.json", &agents_core::canonical::to_string(&v));
    for args in [vec!["manifest", "show"], vec!["manifest", "hash"]] {
        let mut a: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        a.push(v2.clone().into());
        let o = agents(a);
        assert_eq!(code(&o), 2);
        let e = stderr(&o);
        assert!(e.contains("is a version 2 permission manifest; this build of `agents` reads version 1"), "{e}");
    }
    let o = agents(["manifest".as_ref(), "diff".as_ref(), fixture("helpdesk-v1.json").as_os_str(), v2.as_os_str()]);
    assert_eq!(code(&o), 2, "an unreadable side is an error, not a verdict");

    let log = write(dir.path(), "audit.jsonl", &seal_chain(normal_run()));
    let o = agents(["manifest".as_ref(), "show".as_ref(), log.as_os_str()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("is an audit log, not a permission manifest"), "{}", stderr(&o));
}

#[test]
fn render_writes_a_self_contained_escaped_report() {
    let dir = tempdir();
    let out = dir.path().join("report.html");
    let o = agents([
        "manifest".as_ref(),
        "render".as_ref(),
        fixture("helpdesk-v2.json").as_os_str(),
        "--diff".as_ref(),
        fixture("helpdesk-v1.json").as_os_str(),
        "--roles".as_ref(),
        fixture("roles.json").as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains(r#"<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;"#));
    for id in [
        "id=\"capability-graph\"",
        "id=\"summary-table\"",
        "id=\"changes-table\"",
        "id=\"tools-table\"",
        "id=\"policies-table\"",
        "id=\"reachability-table\"",
        "id=\"widening-banner\"",
    ] {
        assert!(html.contains(id), "missing {id}");
    }
    // Every tool is a node of the graph, and the widened ones are marked.
    for t in helpdesk_v2().tools {
        assert!(html.contains(&format!("data-tool=\"{}\"", t.name)), "{} missing from the graph", t.name);
    }
    assert!(html.contains(">NEW</text>") && html.contains(">WIDENED</text>"));
    // Manifest text is escaped, never interpreted.
    assert!(!html.contains("<b>with</b>"));
    assert!(html.contains("&#60;b&#62;with&#60;/b&#62; &#34;personal&#34; phone numbers &#38; addresses"));
    assert_no_external_references(&html);

    // Without roles, the report says how to add them.
    let o = agents([
        "manifest".as_ref(),
        "render".as_ref(),
        fixture("helpdesk-v1.json").as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code(&o), 0);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("id=\"roles-missing\"") && html.contains("--roles roles.json"));
    assert!(!html.contains("id=\"changes\""));
}

#[test]
fn render_rejects_a_bad_roles_file() {
    let dir = tempdir();
    let roles = write(dir.path(), "roles.json", r#"{"nurse": "patient.read"}"#);
    let o = agents([
        "manifest".as_ref(),
        "render".as_ref(),
        fixture("helpdesk-v1.json").as_os_str(),
        "--roles".as_ref(),
        roles.as_os_str(),
        "-o".as_ref(),
        dir.path().join("r.html").as_os_str(),
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("role `nurse` must map to a list of permission names"), "{}", stderr(&o));
}

/// Nothing in the document can make a browser fetch: no element that loads a resource, no
/// link other than to a fragment of the page, no CSS `url(...)` or `@import`.
pub fn assert_no_external_references(html: &str) {
    let lower = html.to_ascii_lowercase();
    for bad in [
        "<script",
        "<img",
        "<link",
        "<iframe",
        "<object",
        "<embed",
        "<video",
        "<audio",
        "<source",
        "src=",
        "url(",
        "@import",
        "xlink:href",
        "srcset",
        "<base",
    ] {
        assert!(!lower.contains(bad), "the report contains `{bad}`");
    }
    for (i, _) in lower.match_indices("href=") {
        let rest = &lower[i + 5..];
        assert!(rest.starts_with("\"#"), "a link that leaves the page: {}", &html[i..(i + 60).min(html.len())]);
    }
    assert!(!lower.contains("http://") && !lower.contains("https://"), "the report names a URL");
}

#[test]
fn manifest_text_cannot_add_markup_to_the_report() {
    let dir = tempdir();
    let render = |name: &str, m: &agents_core::manifest::Manifest| {
        let file = write(dir.path(), &format!("{name}.json"), &m.to_canonical_string());
        let out = dir.path().join(format!("{name}.html"));
        let o = agents([
            "manifest".as_ref(),
            "render".as_ref(),
            file.as_os_str(),
            "--diff".as_ref(),
            fixture("helpdesk-v1.json").as_os_str(),
            "--roles".as_ref(),
            fixture("roles.json").as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        std::fs::read_to_string(out).unwrap()
    };
    // The same text without markup, so both reports have the same rows and cells.
    let plain = render("plain", &marked_up(" plain text"));
    let hostile = render("hostile", &marked_up(MARKUP));
    // Every character that opens or closes a tag or an attribute value comes from the
    // template: the hostile report has exactly as many as the plain one.
    for c in ['<', '>', '"', '\''] {
        assert_eq!(hostile.matches(c).count(), plain.matches(c).count(), "manifest text added `{c}` to the page");
    }
    for tag in ["<img", "<script", "<!--", "' onmouseover"] {
        assert!(!hostile.contains(tag), "`{tag}` reached the page as markup");
    }
    // The text is all there, as text.
    assert!(hostile.contains("&#60;img src=x onerror=alert(2)&#62;&#60;script&#62;alert(3)&#60;/script&#62;"));
    assert!(hostile.contains("data-tool=\"open_ticket&#34;&#39; onmouseover=&#39;alert(1)&#39;"));
}

/// The models and the budget: `show` prints them with the key masked (a manifest never holds
/// one), and a model on a new host or a raised cap is a widening that fails the gate.
#[test]
fn models_and_budget_are_shown_and_their_widenings_fail_the_gate() {
    use agents_core::budget::BudgetEntry;
    use agents_core::models::{ModelEntry, ModelProvider};
    let dir = tempdir();
    let mut old = helpdesk_v1();
    old.agent.models = Some(vec![ModelEntry::new(ModelProvider::OpenAi, "gpt-4.1-mini", "api.openai.com")]);
    old.agent.budget = BudgetEntry { tokens_per_run: Some(100_000), usd_per_run_micros: Some(250_000) };
    let mut new = old.clone();
    new.agent.models.as_mut().unwrap().push(ModelEntry::new(
        ModelProvider::OpenAiCompatible,
        "gpt-4.1-mini",
        "llm.proxy.example",
    ));
    new.agent.budget.tokens_per_run = Some(400_000);
    let (a, b) = (
        write(dir.path(), "old.json", &old.to_canonical_string()),
        write(dir.path(), "new.json", &new.to_canonical_string()),
    );

    let o = agents(["manifest".as_ref(), "show".as_ref(), a.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("openai:gpt-4.1-mini@api.openai.com (key: masked)"), "{s}");
    assert!(s.contains("100000 model tokens per run, 0.25 USD per run"), "{s}");

    let o = agents(["manifest".as_ref(), "diff".as_ref(), a.as_os_str(), b.as_os_str()]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("2 widening, 0 narrowing, 0 neutral"), "{s}");
    assert!(s.contains("on a new host `llm.proxy.example`"), "{s}");
    assert!(s.contains("budget cap tokens_per_run raised from 100000 to 400000"), "{s}");
}
