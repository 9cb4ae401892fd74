//! Properties of the capability handles: no path escapes its declared directory (random paths
//! with `..`, symlinks, chains and loops, and a concurrent rename race), and `NetAccess` reads
//! URLs exactly as the `url` crate (the HTTP client's parser) does.

use super::*;
use agents_core::{PolicySpec, Risk, Tier};
use proptest::prelude::*;
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn spec(fs_read: Vec<String>, fs_write: Vec<String>, net_hosts: Vec<&'static str>) -> &'static ToolSpec {
    let list = |v: Vec<String>| -> &'static [&'static str] {
        Box::leak(v.into_iter().map(leak).collect::<Vec<_>>().into_boxed_slice())
    };
    Box::leak(Box::new(ToolSpec {
        name: "t",
        title: None,
        description: "d",
        permission: "public",
        tier: Tier::Read,
        risk: Risk::Low,
        policy: PolicySpec {
            fs_read: list(fs_read),
            fs_write: list(fs_write),
            net_hosts: Box::leak(net_hosts.into_boxed_slice()),
            env_vars: &[],
            isolated: false,
            egress: false,
        },
        params: &[],
        uses: &[],
        import: None,
        handoff: None,
    }))
}

const SECRET: &[u8] = b"SECRET outside the declared directory";

/// `inside/` (declared) and `outside/` (not), with symlinks from inside to outside (relative,
/// absolute, to a directory, through a chain), loops, and links that stay inside.
fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    // In memory where the system has it: the test opens files 10^5 times.
    let tmp = match std::path::Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm"),
        false => tempfile::tempdir(),
    }
    .expect("a temporary directory");
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (inside, outside) = (base.join("inside"), base.join("outside"));
    for dir in [&inside, &inside.join("sub"), &inside.join("race_real"), &outside, &outside.join("sub")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    for f in ["file.txt", "sub/a.txt", "race_real/secret.txt"] {
        std::fs::write(inside.join(f), b"inside").unwrap();
    }
    for f in ["secret.txt", "file.txt", "sub/a.txt", "a.txt"] {
        std::fs::write(outside.join(f), SECRET).unwrap();
    }
    std::fs::write(base.join("secret.txt"), SECRET).unwrap();
    let links: &[(&str, PathBuf)] = &[
        ("esc_rel", "../outside/secret.txt".into()),
        ("esc_abs", outside.join("secret.txt")),
        ("esc_dir", "../outside".into()),
        ("esc_abs_dir", outside.clone()),
        ("chain1", "chain2".into()),
        ("chain2", "chain3".into()),
        ("chain3", "esc_rel".into()),
        ("loop1", "loop2".into()),
        ("loop2", "loop1".into()),
        ("self_loop", "self_loop".into()),
        ("ok_link", "file.txt".into()),
        ("ok_dir", "sub".into()),
        ("sub/up", "..".into()),
        ("sub/upup", "../..".into()),
        ("sub/esc", "../../outside/sub/a.txt".into()),
        ("race_evil", "../outside".into()),
    ];
    for (name, target) in links {
        symlink(target, inside.join(name)).unwrap();
    }
    (tmp, inside, outside)
}

const PARTS: &[&str] = &[
    "..",
    ".",
    "file.txt",
    "sub",
    "a.txt",
    "secret.txt",
    "esc_rel",
    "esc_abs",
    "esc_dir",
    "esc_abs_dir",
    "chain1",
    "loop1",
    "self_loop",
    "ok_link",
    "ok_dir",
    "up",
    "upup",
    "esc",
    "inside",
    "outside",
    "race_real",
];

#[test]
fn no_path_escapes_the_declared_directory() {
    let (_tmp, inside, outside) = tree();
    let glob = format!("{}/**", inside.display());
    let fs = FsAccess::for_spec(spec(vec![glob.clone()], vec![glob], Vec::new()));
    // The tree holds ways out that a plain open would take: the test can fail.
    assert_eq!(std::fs::read(inside.join("chain1")).unwrap(), SECRET);
    assert_eq!(std::fs::read(inside.join("sub/upup/secret.txt")).unwrap(), SECRET);
    // ... and ways that stay inside, which the handle allows.
    assert_eq!(fs.read(inside.join("ok_link")).unwrap(), b"inside");
    assert_eq!(fs.read(inside.join("ok_dir/up/sub/a.txt")).unwrap(), b"inside");

    // XorShift: the default ChaCha generator costs more than the opens themselves here.
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 100_000,
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    });
    let (allowed, cases) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
    // One case in eight writes (the rest read): enough to show no write lands outside.
    let result = runner.run(&(prop::collection::vec(0..PARTS.len(), 1..7), 0..8u8), |(parts, op)| {
        let write = op == 0;
        cases.set(cases.get() + 1);
        let mut path = inside.clone();
        for p in &parts {
            path.push(PARTS[*p]);
        }
        if write {
            if fs.write(&path, b"written").is_ok() {
                allowed.set(allowed.get() + 1);
            }
        } else if let Ok(bytes) = fs.read(&path) {
            allowed.set(allowed.get() + 1);
            prop_assert!(bytes != SECRET, "read outside the declared directory through `{}`", path.display());
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // No write reached a file outside.
    for f in ["secret.txt", "file.txt", "sub/a.txt", "a.txt"] {
        assert_eq!(std::fs::read(outside.join(f)).unwrap(), SECRET, "`{f}` outside was written");
    }
    let (allowed, cases) = (allowed.get(), cases.get());
    assert_eq!(cases, 100_000);
    assert!(allowed > 1_000, "the generated paths should often be allowed ({allowed} of {cases})");
}

#[test]
fn a_rename_race_does_not_escape() {
    let (_tmp, inside, _outside) = tree();
    let fs = FsAccess::for_spec(spec(vec![format!("{}/**", inside.display())], Vec::new(), Vec::new()));
    // `race` is, in turn, a directory inside and a symlink to the directory outside, each put
    // in place by `rename(2)` while the handle opens `race/secret.txt`.
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, inside) = (stop.clone(), inside.clone());
        std::thread::spawn(move || {
            let (race, real, evil) = (inside.join("race"), inside.join("race_real"), inside.join("race_evil"));
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) && swaps < 2_000_000 {
                for from in [&real, &evil] {
                    std::fs::rename(from, &race).unwrap();
                    std::fs::rename(&race, from).unwrap();
                    swaps += 1;
                }
            }
            swaps
        })
    };
    let (mut read_inside, mut refused) = (0u64, 0u64);
    for _ in 0..20_000 {
        match fs.read(inside.join("race/secret.txt")) {
            Ok(bytes) => {
                assert_ne!(bytes, SECRET, "a rename between the check and the open escaped");
                read_inside += 1;
            }
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0 && read_inside + refused == 20_000);
}

/// What the `url` crate resolves, checked against the declared hosts by the plainest rule:
/// the oracle `NetAccess` must agree with.
fn oracle(url: &str, declared: &[(&str, Option<u16>)]) -> bool {
    let Ok(u) = url::Url::parse(url) else { return false };
    if !matches!(u.scheme(), "http" | "https") || !u.username().is_empty() || u.password().is_some() {
        return false;
    }
    let host = match u.host() {
        Some(url::Host::Domain(d)) => d.strip_suffix('.').unwrap_or(d).to_owned(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        None => return false,
    };
    let port = u.port_or_known_default();
    declared.iter().any(|(h, p)| match h.strip_prefix("*.") {
        Some(suffix) => host.ends_with(&format!(".{suffix}")) && (p.is_none() || *p == port),
        None => host == *h && (p.is_none() || *p == port),
    })
}

const DECLARED: &[&str] =
    &["api.example.com:443", "*.internal", "127.0.0.1:8080", "[::1]:9000", "xn--bcher-kva.example"];
const DECLARED_ORACLE: &[(&str, Option<u16>)] = &[
    ("api.example.com", Some(443)),
    ("*.internal", None),
    ("127.0.0.1", Some(8080)),
    ("[::1]", Some(9000)),
    ("xn--bcher-kva.example", None),
];

#[test]
fn tricky_urls_are_read_as_the_http_client_reads_them() {
    let net = NetAccess::for_spec(spec(Vec::new(), Vec::new(), DECLARED.to_vec()));
    let cases: &[(&str, bool)] = &[
        ("https://api.example.com/v1", true),
        // The `url` crate reads `\` as `/`: the host is `evil.example`.
        (r"https://evil.example\@api.example.com/v1", false),
        ("https://evil.example%5C@api.example.com/v1", false),
        ("https://api.example.com@evil.example/", false),
        ("https://user:pw@api.example.com/", false),
        ("https://api.example.com.evil.example/", false),
        ("https://API.Example.COM/", true),
        ("https://api.example.com./v1", true),
        ("https://api.example.com:443/", true),
        ("https://api.example.com:8443/", false),
        ("http://api.example.com/", false),
        ("https://api%2Eexample%2Ecom/", true),
        ("https://a.internal:1234/", true),
        ("https://internal/", false),
        ("https://a.b.internal/", true),
        ("https://xinternal/", false),
        ("http://127.0.0.1:8080/", true),
        ("http://2130706433:8080/", true),
        ("http://0x7f.1:8080/", true),
        ("http://127.0.0.1:8081/", false),
        ("http://[::1]:9000/", true),
        ("http://[0:0:0:0:0:0:0:1]:9000/", true),
        ("http://[::2]:9000/", false),
        ("https://bücher.example/", true),
        ("https://BÜCHER.example/", true),
        ("https://xn--bcher-kva.example/", true),
        ("ftp://api.example.com/", false),
        ("file:///etc/passwd", false),
        ("https:api.example.com", true),
        ("https:/\\api.example.com/", true),
        ("//api.example.com/", false),
        ("https://api.example.com\t/", true),
        ("https://[api.example.com]/", false),
        ("https://api.example.com#@evil.example", true),
        ("https://evil.example#@api.example.com", false),
        ("https://evil.example?@api.example.com", false),
    ];
    for (url, allowed) in cases {
        let host = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_owned));
        assert_eq!(net.check_url(url).is_ok(), *allowed, "{url} (the url crate reads host {host:?})");
        assert_eq!(oracle(url, DECLARED_ORACLE), *allowed, "oracle on {url}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4_000,
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    })]

    #[test]
    fn net_access_agrees_with_the_url_crate_on_generated_urls(
        scheme in prop::sample::select(vec!["http", "https", "ftp", "HTTPS", "ws"]),
        userinfo in prop::sample::select(vec!["", "user@", "user:pw@", "api.example.com@", "evil.example\\@", "a%40b@"]),
        host in prop::sample::select(vec![
            "api.example.com", "API.EXAMPLE.COM", "api.example.com.", "api.example.com..", "evil.example",
            "a.internal", "internal", "x.y.internal.", "127.0.0.1", "127.1", "0x7f000001", "[::1]", "[::ffff:127.0.0.1]",
            "bücher.example", "xn--bcher-kva.example", "api%2eexample.com", "api.example.com\\", "",
        ]),
        port in prop::sample::select(vec!["", ":443", ":80", ":8080", ":9000", ":1234", ":", ":65536", ":0443"]),
        rest in prop::sample::select(vec!["/", "/v1?x=1", "\\evil.example/", "#@evil.example", "?@evil.example", "/@evil.example", ""]),
    ) {
        let net = NetAccess::for_spec(spec(Vec::new(), Vec::new(), DECLARED.to_vec()));
        let url = format!("{scheme}://{userinfo}{host}{port}{rest}");
        prop_assert_eq!(net.check_url(&url).is_ok(), oracle(&url, DECLARED_ORACLE), "{}", url);
        // What is checked is what is fetched: the checked URL is the one the client parses.
        if let Ok(checked) = net.check_url(&url) {
            prop_assert_eq!(Some(checked), url::Url::parse(&url).ok());
        }
    }
}

/// Serves one HTTP response per connection on loopback, counting requests, until dropped.
#[cfg(feature = "http")]
fn serve(response: String) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        // Bounded: a test makes at most a few requests.
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { break };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (port, hits)
}

#[cfg(feature = "http")]
#[tokio::test]
async fn the_client_follows_no_redirect_outside_the_declared_hosts() {
    let (outside, outside_hits) =
        serve("HTTP/1.1 200 OK\r\ncontent-length: 7\r\nconnection: close\r\n\r\nescaped".into());
    let (declared, declared_hits) = serve(format!(
        "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{outside}/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    ));
    let host: &'static str = leak(format!("127.0.0.1:{declared}"));
    let net = NetAccess::for_spec(spec(Vec::new(), Vec::new(), vec![host]));
    let client = net.client().unwrap();
    // A request to an undeclared host is refused before anything is sent.
    assert!(client.get(&format!("http://127.0.0.1:{outside}/")).is_err());
    // A declared host that redirects elsewhere: the redirect is refused, naming the tool.
    let request = client.get(&format!("http://127.0.0.1:{declared}/")).unwrap().build().unwrap();
    let err = client.execute(request).await.unwrap_err();
    assert!(matches!(err, NetError::Http(_)), "{err}");
    assert!(format!("{err:?}").contains("may not follow a redirect"), "{err:?}");
    assert_eq!(declared_hits.load(Ordering::SeqCst), 1);
    assert_eq!(outside_hits.load(Ordering::SeqCst), 0, "the redirect reached an undeclared host");
}

/// `*` (any host) reaches any host by `http` or `https`, and follows a redirect to another
/// host; a handle without net hosts reaches nothing. Either way the URL's form is still
/// checked (scheme, credentials).
#[cfg(feature = "http")]
#[tokio::test]
async fn any_host_reaches_every_host_and_no_hosts_reach_none() {
    let (target, target_hits) = serve("HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\npage".into());
    let (hop, hop_hits) = serve(format!(
        "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{target}/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    ));
    let any = NetAccess::for_spec(spec(Vec::new(), Vec::new(), vec!["*"]));
    for url in ["https://example.com/a", "http://10.1.2.3:8080/", "http://[::1]/", "https://xn--bcher-kva.example/"] {
        assert!(any.check_url(url).is_ok(), "{url}");
    }
    for url in ["ftp://example.com/", "https://user:pw@example.com/", "file:///etc/passwd"] {
        assert!(any.check_url(url).is_err(), "{url}");
    }
    let client = any.client().unwrap();
    let request = client.get(&format!("http://127.0.0.1:{hop}/")).unwrap().build().unwrap();
    let response = client.execute(request).await.expect("any host, redirects included");
    assert_eq!(response.text().await.unwrap(), "page");
    assert_eq!((hop_hits.load(Ordering::SeqCst), target_hits.load(Ordering::SeqCst)), (1, 1));

    let none = NetAccess::for_spec(spec(Vec::new(), Vec::new(), Vec::new()));
    assert!(!none.allows("127.0.0.1", Some(target)) && !none.allows("example.com", None));
    assert!(none.client().unwrap().get(&format!("http://127.0.0.1:{target}/")).is_err());
    assert_eq!(target_hits.load(Ordering::SeqCst), 1, "a handle without hosts sent nothing");
}
