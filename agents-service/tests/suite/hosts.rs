//! The `Host` allowlist on every route, over real loopback HTTP: a request naming a host the
//! service does not answer for (what a DNS-rebinding page makes a browser send) is refused on
//! the REST API, its event streams and the console's development login, and nothing runs.

use crate::common::{self, AGENT, alice, call, dev, serve_with};
use agents_runtime::Principal;
use agents_service::{Console, DevAuthenticator, Person, ServiceLimits};
use std::sync::Arc;

fn host(h: &str) -> (String, String) {
    ("host".into(), h.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_is_refused_on_every_route_and_nothing_runs() {
    let people = vec![Person { principal: alice(), label: "Alice".into() }];
    let console = Console::dev_login(people);
    let s =
        serve_with(console.authenticator(Arc::new(DevAuthenticator::enabled())), ServiceLimits::default(), None).await;
    // The console beside the API, on its own listener: the service's listener pins its port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    let app = s.service.router().merge(console.router(&s.service));
    s.service.serve(listener, app, agents_service::ConnectionLimits::default()).unwrap();
    let start = serde_json::json!({"agent": AGENT, "input": "lookup it", "session_id": "rebind-1"}).to_string();
    let port = base.port();
    let foreign = [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        // A loopback name on another port is another origin's name for this address.
        format!("localhost:{}", port.wrapping_add(1)),
    ];
    let routes: [(&str, &str, Option<&str>); 5] = [
        ("GET", "/v1/agents", None),
        ("POST", "/v1/runs", Some(&start)),
        ("GET", "/v1/runs/any/events", None),
        ("POST", "/console/login", Some(r#"{"person": 0}"#)),
        ("GET", "/console", None),
    ];
    for name in &foreign {
        for (method, path, body) in routes {
            let headers = [dev(&alice()), host(name), ("x-agents-console".into(), "1".into())];
            let r = call(base, method, path, &headers, body).await;
            assert_eq!(
                (r.status, r.code().as_str()),
                (403, "host_not_allowed"),
                "{method} {path} as {name}: {}",
                r.body
            );
            assert!(!r.headers.contains_key("set-cookie"), "no session was opened for {name}");
        }
    }
    assert!(s.audit.records().is_empty(), "nothing ran: {:?}", s.audit.records());
    assert_eq!(common::executed("rebind-1"), 0);
    // The names the service answers for: loopback names and the bound address, on its port.
    for name in [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("LOCALHOST:{port}")] {
        let r = call(base, "GET", "/v1/agents", &[dev(&alice()), host(&name)], None).await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
    }
    let r = call(
        base,
        "POST",
        "/console/login",
        &[host(&format!("localhost:{port}")), ("x-agents-console".into(), "1".into())],
        Some(r#"{"person": 0}"#),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(base, "POST", "/v1/runs", &[dev(&alice()), host(&format!("[::1]:{port}"))], Some(&start)).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_list_replaces_the_default_and_a_bad_one_is_refused() {
    let audit = Arc::new(agents_runtime::audit::MemorySink::new());
    let builder = agents_service::Service::builder(Arc::new(DevAuthenticator::enabled()), audit.clone(), audit.clone());
    let err = builder.allowed_hosts(["agents example"]).unwrap_err().to_string();
    assert!(err.contains("is not a host"), "{err}");
    let builder = agents_service::Service::builder(Arc::new(DevAuthenticator::enabled()), audit.clone(), audit.clone());
    let service = builder.allowed_hosts(["agents.example.com"]).unwrap().build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    service.serve(listener, service.router(), agents_service::ConnectionLimits::default()).unwrap();
    let who = Principal::new("alice", "acme", "employee");
    let r = call(base, "GET", "/v1/agents", &[dev(&who), host("agents.example.com:443")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(base, "GET", "/v1/agents", &[dev(&who), host(&format!("127.0.0.1:{}", base.port()))], None).await;
    assert_eq!((r.status, r.code().as_str()), (403, "host_not_allowed"), "the default is replaced: {}", r.body);
}
