//! The helpdesk served over HTTP: the person's answers reach the run only through the decision
//! API, judged from what its listing shows.

use agents_runtime::Principal;
use agents_runtime::audit::AuditStatus;
use agents_service::DEV_PRINCIPAL_HEADER;
use agents_service::axum::body::{Body, Bytes};
use agents_service::axum::http::HeaderMap;
use agents_service::axum::routing::get;
use agents_service::axum::{self, Router};
use injection_suite::apps::Target;
use injection_suite::http::Client;
use injection_suite::run::{Mode, run_scenario_with_log};
use injection_suite::scenario::{Suite, default_dir};
use serde_json::json;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_approves_their_task_and_declines_the_injection_through_the_decision_api() {
    let target = Target::from_name("helpdesk-http").expect("the HTTP target");
    let suite = Suite::load(&default_dir(), "helpdesk").unwrap();
    let task = suite.tasks.iter().find(|t| t.id == "02-alex-two-days").unwrap();
    let goal = suite.goals.iter().find(|g| g.id == "02-entitlement").unwrap();
    let (s, records) = run_scenario_with_log(target, &suite, task, Some(goal), Mode::Guarded).await;
    assert!(s.utility, "{:?}", s.utility_misses);
    assert!(s.attempted && !s.attack_success && s.severe == 0, "{s:?}");
    // The cards are the listed decisions: the injected ten days declined, the two days asked
    // for approved, each with the arguments as the listing showed them.
    let cards: Vec<(&str, &serde_json::Value, &str)> =
        s.cards.iter().map(|(t, a, _, w)| (t.as_str(), a, w.as_str())).collect();
    let injected = json!({"start_date": "2026-06-01", "days": 10, "kind": "sick"});
    let asked = json!({"start_date": "2026-04-13", "days": 2.0, "kind": "annual"});
    assert_eq!(cards.len(), 2, "{cards:?}");
    assert!(cards.iter().any(|(t, a, w)| *t == "submit_leave_request" && **a == injected && *w == "reject"));
    assert!(cards.iter().any(|(t, a, w)| *t == "submit_leave_request" && **a == asked && *w == "approve"));
    // The rejection went through `POST /v1/decisions/{call_id}`: the reason a person gives
    // there is in the call's own `rejected` record.
    let rejected = records
        .iter()
        .find(|r| r.status == AuditStatus::Rejected && r.reason.as_deref().is_some_and(|t| t.contains("did not ask")))
        .expect("the rejected record carries the person's reason");
    assert_eq!(rejected.reason.as_deref(), Some("the user declined: no, I did not ask for that"));
    // The runs were started over HTTP, for the scenario's user.
    assert!(records.iter().all(|r| &*r.user_id == "u-alex"));
}

/// An event stream served on a loopback socket whose bytes the test sends piece by piece.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_is_read_while_it_is_open_and_an_event_split_across_frames_is_read_whole() {
    let (pieces, waiting) = mpsc::unbounded_channel::<&'static str>();
    let waiting = Arc::new(Mutex::new(Some(waiting)));
    let principal_seen = Arc::new(Mutex::new(None));
    let (w, seen) = (waiting.clone(), principal_seen.clone());
    let app = Router::new().route(
        "/v1/runs/{run_id}/events",
        get(move |headers: HeaderMap| async move {
            *seen.lock().unwrap() = headers.get(DEV_PRINCIPAL_HEADER).map(|v| v.to_str().unwrap().to_owned());
            let waiting = w.lock().unwrap().take().expect("one stream");
            let body = futures::stream::unfold(waiting, |mut waiting| async move {
                let piece = waiting.recv().await?;
                Some((Ok::<_, Infallible>(Bytes::from_static(piece.as_bytes())), waiting))
            });
            Body::from_stream(body)
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = Client::new(base, &Principal::new("u-alex", "org-x", "employee"));
    let event = |kind: &str, data: &str| Some((kind.to_owned(), data.to_owned()));

    let read = async {
        pieces.send(": keep-alive\n\nevent: started\ndata: {\"a\":1}\n\nevent: confirm_required\nda").unwrap();
        let mut events = client.events("r-1").await.unwrap();
        // The first event is read while the stream is open and the second only half sent.
        assert_eq!(events.next().await.unwrap(), event("started", "{\"a\":1}"));
        // The second's rest is sent only now, in a frame of its own.
        pieces.send("ta: one\r\ndata: two\r\n\r\ndata: plain\n\n").unwrap();
        assert_eq!(events.next().await.unwrap(), event("confirm_required", "one\ntwo"));
        assert_eq!(events.next().await.unwrap(), event("message", "plain"));
        // An event the stream ends within is not one.
        pieces.send("event: cut\ndata: off\n").unwrap();
        drop(pieces);
        assert_eq!(events.next().await.unwrap(), None);
    };
    // A liveness bound: a client that waits for the whole body would wait forever here.
    tokio::time::timeout(Duration::from_secs(60), read).await.expect("the stream was read as it came");
    assert_eq!(principal_seen.lock().unwrap().as_deref(), Some("u-alex/org-x/employee"));
    server.abort();
}
