//! The HTML report in a real browser: headless Chromium opens it, the rendered DOM holds the
//! capability graph and the tables, and the page made no network request.
//!
//! How "no request left the page" is checked:
//!
//! 1. Chromium writes a NetLog (`--log-net-log`), which records every request the network
//!    stack starts, with its initiator and network isolation key. Requests a page starts
//!    carry the page's origin (`file://` here); the browser's own background requests
//!    (component updater, account checks) carry `"initiator": "not an origin"` and another
//!    isolation key, and are listed but not counted against the page.
//! 2. A negative control: a page that loads an external image and stylesheet must show up in
//!    the NetLog as page requests, so an empty result for the report means something.
//! 3. A second control: the same page with the report's Content-Security-Policy must make no
//!    page request, so even content that slipped into a report could not fetch anything.
//! 4. `--host-resolver-rules="MAP * ~NOTFOUND"` makes every host name fail to resolve, so no
//!    request of any kind reaches the network while the test runs.
//!
//! The browser is found by `agents_test_support::chromium`, as the web console's browser test
//! finds it: `AGENTS_CHROMIUM` when set, else the first of `chromium`, `chromium-browser`,
//! `google-chrome`, `google-chrome-stable` and `chrome` on `PATH`. Without one the test fails
//! and says what it looked for; install it with `apt-get update && apt-get install -y chromium`
//! (Debian) or point `AGENTS_CHROMIUM` at a Chromium or Chrome binary.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Browser {
    binary: PathBuf,
    work: PathBuf,
}

/// What one headless run produced.
struct Run {
    stdout: String,
    stderr: String,
    netlog: PathBuf,
}

impl Browser {
    /// Runs Chromium headless on `page` with `mode` (`--dump-dom` or `--screenshot=...`).
    fn run(&self, label: &str, page: &Path, mode: &[String]) -> Run {
        let profile = self.work.join(format!("profile-{label}"));
        let netlog = self.work.join(format!("netlog-{label}.json"));
        let out_path = self.work.join(format!("{label}.stdout"));
        let err_path = self.work.join(format!("{label}.stderr"));
        let mut cmd = Command::new(&self.binary);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--hide-scrollbars",
            "--window-size=1400,2600",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--net-log-capture-mode=Default",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .args(mode)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
        let mut child = cmd.spawn().expect("Chromium starts");
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("Chromium did not finish within 120 s ({label}); stderr in {}", err_path.display());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        assert!(status.success(), "Chromium failed ({label}, {status}):\n{}", tail(&stderr));
        Run { stdout, stderr, netlog }
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// Requests in a NetLog: (url, started by a page?).
fn netlog_requests(path: &Path) -> Vec<(String, bool)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no NetLog at {}: {e}", path.display()));
    // A NetLog cut short lacks its closing brackets; the events written so far still count.
    let log: Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .expect("the NetLog is JSON");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].as_u64().expect("NetLog constants");
    log["events"]
        .as_array()
        .expect("NetLog events")
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter_map(|e| {
            let p = &e["params"];
            let url = p["url"].as_str()?.to_owned();
            let initiator = p["initiator"].as_str().unwrap_or("not an origin");
            let nik = p["network_isolation_key"].as_str().unwrap_or("");
            let from_page = initiator != "not an origin" || nik.contains("file://");
            Some((url, from_page))
        })
        .collect()
}

fn page_requests(run: &Run) -> Vec<String> {
    netlog_requests(&run.netlog).into_iter().filter(|(_, page)| *page).map(|(u, _)| u).collect()
}

#[test]
fn report_renders_in_chromium_without_any_request() {
    let binary = agents_test_support::chromium("the browser test of the capability report");
    let work = tempdir();
    let browser = Browser { binary, work: work.path().to_owned() };

    let report = work.path().join("report.html");
    let o = agents([
        "manifest".as_ref(),
        "render".as_ref(),
        fixture("helpdesk-v2.json").as_os_str(),
        "--diff".as_ref(),
        fixture("helpdesk-v1.json").as_os_str(),
        "--roles".as_ref(),
        fixture("roles.json").as_os_str(),
        "-o".as_ref(),
        report.as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    // The rendered DOM: graph, tables, CSP.
    let run = browser.run("report-dom", &report, &["--dump-dom".to_owned()]);
    let dom = &run.stdout;
    assert!(dom.contains("<svg id=\"capability-graph\""), "no graph in the DOM:\n{}", tail(&run.stderr));
    let tools = helpdesk_v2().tools;
    for t in &tools {
        assert!(dom.contains(&format!("data-tool=\"{}\"", t.name)), "graph node for {} missing", t.name);
    }
    assert_eq!(dom.matches("class=\"node tool ").count(), tools.len());
    assert!(dom.contains(">WIDENED</text>") && dom.contains(">NEW</text>"));
    for id in ["summary-table", "changes-table", "tools-table", "policies-table", "reachability-table"] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "table {id} missing from the DOM");
    }
    assert!(dom.contains("http-equiv=\"Content-Security-Policy\"") && dom.contains("default-src 'none'"));
    assert!(dom.contains("&lt;b&gt;with&lt;/b&gt;"), "escaped markup must stay text");

    // Markup in the manifest's text stays text in the browser's DOM: no element it names exists.
    let hostile = write(work.path(), "hostile.json", &marked_up(MARKUP).to_canonical_string());
    let hostile_report = work.path().join("hostile.html");
    let o = agents([
        "manifest".as_ref(),
        "render".as_ref(),
        hostile.as_os_str(),
        "--roles".as_ref(),
        fixture("roles.json").as_os_str(),
        "-o".as_ref(),
        hostile_report.as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let hostile_run = browser.run("hostile-dom", &hostile_report, &["--dump-dom".to_owned()]);
    let hostile_dom = &hostile_run.stdout;
    assert!(
        hostile_dom.contains("<svg id=\"capability-graph\""),
        "no graph in the DOM:\n{}",
        tail(&hostile_run.stderr)
    );
    for element in ["<img", "<script", "onmouseover=\""] {
        assert!(!hostile_dom.contains(element), "`{element}` became part of the DOM");
    }
    assert!(hostile_dom.contains("&lt;img src=x onerror=alert(2)&gt;&lt;script&gt;alert(3)&lt;/script&gt;"));
    assert!(page_requests(&hostile_run).is_empty());

    // Not one request started by the page.
    let requests = netlog_requests(&run.netlog);
    let from_page: Vec<&String> = requests.iter().filter(|(_, p)| *p).map(|(u, _)| u).collect();
    assert!(from_page.is_empty(), "the report made requests: {from_page:?}");
    let background: Vec<&String> = requests.iter().filter(|(_, p)| !*p).map(|(u, _)| u).collect();
    if !background.is_empty() {
        eprintln!("browser background requests (not from the page, none resolvable): {background:?}");
    }

    // Negative control: the detector sees a page that does fetch.
    let control = write(
        work.path(),
        "control.html",
        r#"<!DOCTYPE html><html><head><link rel="stylesheet" href="https://cdn.example.net/x.css"></head><body><img src="http://images.example.com/x.png"><p>control</p></body></html>"#,
    );
    let run = browser.run("control", &control, &["--dump-dom".to_owned()]);
    let fetched = page_requests(&run);
    assert!(
        fetched.iter().any(|u| u.contains("images.example.com"))
            && fetched.iter().any(|u| u.contains("cdn.example.net")),
        "the NetLog check must see a page's requests, saw {fetched:?}"
    );

    // The report's CSP stops the same page from fetching anything.
    let html = std::fs::read_to_string(&report).unwrap();
    let meta_start = html.find("<meta http-equiv=\"Content-Security-Policy\"").unwrap();
    let meta = &html[meta_start..meta_start + html[meta_start..].find('>').unwrap() + 1];
    let guarded = write(
        work.path(),
        "guarded.html",
        &format!(
            r#"<!DOCTYPE html><html><head>{meta}<link rel="stylesheet" href="https://cdn.example.net/x.css"></head><body><img src="http://images.example.com/x.png"><p>guarded</p></body></html>"#
        ),
    );
    let run = browser.run("guarded", &guarded, &["--dump-dom".to_owned()]);
    assert!(run.stdout.contains("guarded"));
    assert_eq!(page_requests(&run), Vec::<String>::new(), "the CSP must block every fetch");

    // A screenshot to look at, kept under the target directory.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("agents-cli-report");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join("report.png");
    let _ = std::fs::remove_file(&png);
    browser.run("screenshot", &report, &[format!("--screenshot={}", png.display())]);
    std::fs::copy(&report, shots.join("report.html")).unwrap();
    let bytes = std::fs::read(&png).expect("Chromium wrote the screenshot");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    assert_eq!(width, 1400);
    assert!(bytes.len() > 50_000, "the screenshot is suspiciously small ({} bytes)", bytes.len());
    eprintln!("screenshot: {}", png.display());
}

/// A composite's report in the browser: every node of the graph is drawn, every edge labelled
/// by its kind, and the page makes no request.
#[test]
fn composite_report_renders_in_chromium_without_any_request() {
    let binary = agents_test_support::chromium("the browser test of the composite report");
    let work = tempdir();
    let browser = Browser { binary, work: work.path().to_owned() };
    let graph = crate::composite::kyc();
    let file = crate::composite::put(work.path(), "kyc.json", &graph);
    let report = work.path().join("kyc.html");
    let o = agents(["manifest".as_ref(), "render".as_ref(), file.as_os_str(), "-o".as_ref(), report.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let run = browser.run("composite-dom", &report, &["--dump-dom".to_owned()]);
    let dom = &run.stdout;
    assert!(dom.contains("<svg id=\"composite-graph\""), "no graph in the DOM:\n{}", tail(&run.stderr));
    for n in graph["nodes"].as_array().unwrap() {
        let id = n["id"].as_str().unwrap();
        assert!(dom.contains(&format!("data-node=\"{id}\"")), "graph node {id} missing");
    }
    assert_eq!(dom.matches("class=\"edge-label\"").count(), graph["edges"].as_array().unwrap().len());
    assert!(page_requests(&run).is_empty(), "the composite report made requests: {:?}", page_requests(&run));
}
