//! The service over real loopback HTTP: runs and their event streams, resume, slow clients,
//! decisions, other principals, limits and audit queries.

use crate::common;

use agents_runtime::audit::AuditStatus;
use agents_service::ServiceLimits;
use common::*;
use serde_json::json;

fn limits() -> ServiceLimits {
    ServiceLimits::default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_streams_every_event_numbered_from_one_to_done() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "stream-1", "lookup the keyboard").await;
    let mut stream = open(s.base, &run, &alice(), None).await;
    assert_eq!(stream.status, 200, "{}", stream.body_if_refused);
    assert!(stream.headers["content-type"].starts_with("text/event-stream"));
    let events = stream.until("done").await;
    let ids: Vec<u64> = events.iter().map(|e| e.id.expect("every event has an id")).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "numbered from 1 without holes");
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    for k in ["tool_call", "tool_result", "message", "done"] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    assert_eq!(events.last().unwrap().json()["status"], "completed");
    assert_eq!(events.iter().find(|e| e.event == "tool_result").unwrap().json()["tool"], "lookup_item");
    // The run ended: the stream ends after its last event.
    assert_eq!(stream.next().await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnecting_with_last_event_id_misses_nothing() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "resume-1", "submit a request").await;
    let mut first = open(s.base, &run, &alice(), None).await;
    let before = first.until("confirm_required").await;
    let last = before.last().unwrap().id.unwrap();
    drop(first);
    // While nobody listens, the decision lets the run go on and end.
    let call_id = before.last().unwrap().json()["call_id"].as_str().unwrap().to_owned();
    let r = post(s.base, &format!("/v1/decisions/{call_id}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut again = open(s.base, &run, &alice(), Some(last)).await;
    let after = again.rest().await;
    assert_eq!(after.first().unwrap().id, Some(last + 1), "resumes right after the last id seen");
    assert_eq!(after.last().unwrap().event, "done");
    // The two halves are exactly the whole stream.
    let mut whole = open(s.base, &run, &alice(), None).await.rest().await;
    let mut joined = before.clone();
    joined.extend(after.clone());
    assert_eq!(joined, whole, "nothing missed, nothing repeated");
    assert!(whole.iter().any(|e| e.event == "tool_result" && e.json()["status"] == "executed"));
    // A resume from the middle, by query parameter (an EventSource's first connect).
    let mid = whole[2].id.unwrap();
    let r = call(s.base, "GET", &format!("/v1/runs/{run}/events?last_event_id={mid}"), &[dev(&alice())], None).await;
    assert_eq!(r.status, 200);
    assert!(
        r.body.starts_with(&format!("id: {}\n", mid + 1)) || r.body.contains(&format!("\nid: {}\n", mid + 1)),
        "{}",
        &r.body[..200.min(r.body.len())]
    );
    assert!(!r.body.contains(&format!("id: {mid}\n")));
    whole.clear();
    // A malformed id is refused.
    let bad = open(s.base, &run, &alice(), None).await;
    drop(bad);
    let r = call(
        s.base,
        "GET",
        &format!("/v1/runs/{run}/events"),
        &[dev(&alice()), ("Last-Event-ID".into(), "x1".into())],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_last_event_id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_client_never_stalls_the_run_and_learns_what_it_missed() {
    let mut l = limits();
    l.journal_bytes = 256 * 1024;
    let s = serve(l).await;
    let run = start(s.base, &alice(), "slow-1", "flood me").await;
    // Connected, then never read while the run writes ~5 MiB of events.
    let mut slow = open(s.base, &run, &alice(), None).await;
    assert_eq!(slow.status, 200);
    let summary = ended(s.base, &alice(), &run).await;
    assert_eq!(summary["status"], "completed", "{summary}");
    let executed = s.audit.records().iter().filter(|r| r.status == AuditStatus::Executed && *r.run_id == *run).count();
    assert_eq!(executed, 80, "every call ran");
    // Now it reads: what the socket held, then a gap with the durable records, then the rest.
    let events = slow.rest().await;
    // (More than one gap when the stream fell behind more than once while the run went on:
    // each brings the run's records written so far.)
    let gaps: Vec<usize> = events.iter().enumerate().filter(|(_, e)| e.event == "gap").map(|(i, _)| i).collect();
    assert!(!gaps.is_empty(), "the client is told it missed events");
    let mut announced = 0;
    for &gap in &gaps {
        let g = events[gap].json();
        assert_eq!(g["code"], "events_lost");
        announced += g["records"].as_u64().unwrap();
    }
    // Nothing is lost silently: every numbered event follows the one before, unless a gap
    // (which says what it skipped) stands between them.
    let numbered: Vec<&Sse> = events.iter().filter(|e| e.id.is_some()).collect();
    for w in numbered.windows(2) {
        if w[1].event != "gap" {
            assert_eq!(w[1].id.unwrap(), w[0].id.unwrap() + 1, "{:?} then {:?}", w[0], w[1]);
        } else {
            assert_eq!(w[1].json()["from"].as_u64().unwrap(), w[0].id.unwrap() + 1, "a gap starts right after");
        }
    }
    let records = events.iter().filter(|e| e.event == "record").count() as u64;
    assert_eq!(records, announced);
    let last_gap = events[*gaps.last().unwrap()].json();
    assert!(last_gap["records"].as_u64().unwrap() > 80, "the run's records stand in for the lost events: {last_gap}");
    assert_eq!(events.last().unwrap().event, "done");
    // Ids only grow.
    let ids: Vec<u64> = events.iter().filter_map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_executes_the_call_exactly_once() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "approve-1", "submit a request").await;
    let call = pending_call(s.base, &alice()).await;
    assert_eq!(executed("approve-1"), 0, "nothing runs before the decision");
    let listed = get(s.base, "/v1/decisions", &alice()).await.json();
    assert_eq!(listed["decisions"][0]["title"], "Submit an item request");
    assert_eq!(listed["decisions"][0]["run_id"], run.as_str());
    let r = post(s.base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let again = post(s.base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!((again.status, again.code().as_str()), (404, "not_found"), "a decision counts once");
    assert_eq!(ended(s.base, &alice(), &run).await["status"], "completed");
    assert_eq!(executed("approve-1"), 1);
    let statuses: Vec<AuditStatus> = records_of(&s.audit, &call).iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]);
    assert!(get(s.base, "/v1/decisions", &alice()).await.json()["decisions"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decision_listing_says_why_a_read_that_reaches_out_waits_as_the_card_does() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "why-1", "share the stock note").await;
    let call = pending_call(s.base, &alice()).await;
    let listed = get(s.base, "/v1/decisions", &alice()).await.json();
    let d = &listed["decisions"][0];
    assert_eq!((d["call_id"].as_str(), d["tool"].as_str()), (Some(call.as_str()), Some("share_note")), "{listed}");
    assert_eq!(d["arguments"]["note"], "keyboard: in stock");
    let why = d["why"].as_str().unwrap_or_else(|| panic!("the listing says why: {listed}"));
    assert!(why.contains("`note`") && why.contains("`lookup_item`"), "{why}");
    // The same words as the card of the run's event stream.
    let events = open(s.base, &run, &alice(), None).await.until("confirm_required").await;
    assert_eq!(events.last().unwrap().json()["why"], why);
    let r = post(s.base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "reject"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(ended(s.base, &alice(), &run).await["status"], "completed");
    // A plain action's decision has nothing to say beyond its tool.
    let run = start(s.base, &alice(), "why-2", "submit a request").await;
    pending_call(s.base, &alice()).await;
    let listed = get(s.base, "/v1/decisions", &alice()).await.json();
    assert!(listed["decisions"][0].get("why").is_none(), "{listed}");
    let call = listed["decisions"][0]["call_id"].as_str().unwrap().to_owned();
    post(s.base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "reject"}"#).await;
    ended(s.base, &alice(), &run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_with_a_reason_runs_nothing_and_records_the_reason() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "reject-1", "submit a request").await;
    let call = pending_call(s.base, &alice()).await;
    for (body, code) in [
        (r#"{"verdict": "approve", "reason": "fine"}"#, "invalid_request"),
        (r#"{"verdict": "maybe"}"#, "invalid_request"),
        (r#"{"verdict": "reject", "verdict": "approve"}"#, "invalid_json"),
        (r#"{"verdict": "reject", "reason": ""}"#, "invalid_request"),
    ] {
        let r = post(s.base, &format!("/v1/decisions/{call}"), &alice(), body).await;
        assert_eq!((r.status, r.code().as_str()), (400, code), "{body}: {}", r.body);
    }
    let long = json!({"verdict": "reject", "reason": "x".repeat(1001)}).to_string();
    assert_eq!(post(s.base, &format!("/v1/decisions/{call}"), &alice(), &long).await.status, 400);
    // Refused input changed nothing: still pending.
    assert_eq!(pending_call(s.base, &alice()).await, call);
    let r =
        post(s.base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "reject", "reason": "wrong week"}"#)
            .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(ended(s.base, &alice(), &run).await["status"], "completed");
    assert_eq!(executed("reject-1"), 0);
    let records = records_of(&s.audit, &call);
    let statuses: Vec<AuditStatus> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Rejected], "one final record, no separate notice");
    let rejected = &records[1];
    assert_eq!(rejected.reason.as_deref(), Some("the user declined: wrong week"), "the reason is in the record");
    assert_eq!(*rejected.user_id, *"alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_user_cannot_see_decide_stop_or_stream_a_run_and_is_audited() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "cross-1", "submit a request").await;
    let call = pending_call(s.base, &alice()).await;
    for intruder in
        [bob(), carol(), Principal::new("alice", "acme", "auditor"), Principal::new("alice", "globex", "employee")]
    {
        let who = format!("{}/{}/{}", intruder.user_id, intruder.org_id, intruder.role);
        let r = post(s.base, &format!("/v1/decisions/{call}"), &intruder, r#"{"verdict": "approve"}"#).await;
        assert_eq!((r.status, r.code().as_str()), (404, "not_found"), "{who} decide");
        assert!(
            get(s.base, "/v1/decisions", &intruder).await.json()["decisions"].as_array().unwrap().is_empty(),
            "{who}"
        );
        let same_org_user = intruder.user_id == "alice" && intruder.org_id == "acme";
        if !same_org_user {
            let r = get(s.base, &format!("/v1/runs/{run}"), &intruder).await;
            assert_eq!((r.status, r.code().as_str()), (404, "not_found"), "{who} status");
            let st = open(s.base, &run, &intruder, None).await;
            assert_eq!(st.status, 404, "{who} events");
            let r = post(s.base, &format!("/v1/runs/{run}/stop"), &intruder, "{}").await;
            assert_eq!((r.status, r.code().as_str()), (404, "not_found"), "{who} stop");
            assert!(get(s.base, "/v1/runs", &intruder).await.json()["runs"].as_array().unwrap().is_empty(), "{who}");
            let q = get(s.base, &format!("/v1/audit?run={run}"), &intruder).await;
            assert!(q.json()["records"].as_array().unwrap().is_empty(), "{who} sees no records of the run");
        }
    }
    // Nothing changed for Alice: still waiting, still hers to decide.
    assert_eq!(get(s.base, &format!("/v1/runs/{run}"), &alice()).await.json()["status"], "running");
    let r = post(s.base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    ended(s.base, &alice(), &run).await;
    assert_eq!(executed("cross-1"), 1);
    // Every refusal is on record, as the one who tried.
    let denied: Vec<_> = s.audit.records().into_iter().filter(|r| r.status == AuditStatus::Denied).collect();
    let by = |u: &str, o: &str| denied.iter().filter(|r| *r.user_id == *u && *r.org_id == *o).count();
    assert_eq!(by("bob", "acme"), 4, "decide, status, events, stop: {denied:#?}");
    assert_eq!(by("carol", "globex"), 4);
    assert!(denied.iter().all(|r| r.reason.as_deref().unwrap().starts_with("refused: ")));
    // The auditor of Alice's organisation reads them; the other organisation's does not.
    let q = get(s.base, "/v1/audit?status=denied&user=bob", &audrey()).await.json();
    assert_eq!(q["records"].as_array().unwrap().len(), 4);
    let q = get(s.base, &format!("/v1/audit?run={run}"), &Principal::new("gus", "globex", "auditor")).await.json();
    assert!(q["records"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_a_waiting_run_with_nothing_executed() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "stop-1", "submit a request").await;
    let call = pending_call(s.base, &alice()).await;
    let r = post(s.base, &format!("/v1/runs/{run}/stop"), &alice(), "{}").await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(ended(s.base, &alice(), &run).await["status"], "cancelled");
    assert_eq!(executed("stop-1"), 0);
    assert!(records_of(&s.audit, &call).iter().any(|r| r.status == AuditStatus::Skipped));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_per_user_are_capped() {
    let mut l = limits();
    l.max_streams_per_user = 2;
    let s = serve(l).await;
    let run = start(s.base, &alice(), "cap-1", "submit a request").await;
    let a = open(s.base, &run, &alice(), None).await;
    let b = open(s.base, &run, &alice(), None).await;
    assert_eq!((a.status, b.status), (200, 200));
    let c = open(s.base, &run, &alice(), None).await;
    assert_eq!(c.status, 429);
    let body: serde_json::Value = serde_json::from_str(&c.body_if_refused).unwrap();
    assert_eq!(body["error"]["code"], "too_many_streams");
    // Another user's count is their own.
    let bob_run = start(s.base, &bob(), "cap-2", "lookup it").await;
    assert_eq!(open(s.base, &bob_run, &bob(), None).await.status, 200);
    // A closed stream gives its place back.
    drop(a);
    let mut reopened = None;
    for _ in 0..100 {
        let d = open(s.base, &run, &alice(), None).await;
        if d.status == 200 {
            reopened = Some(d);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(reopened.is_some(), "the closed stream's place came back");
    drop(b);
    post(s.base, &format!("/v1/runs/{run}/stop"), &alice(), "{}").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_json_with_stable_codes() {
    let s = serve(limits()).await;
    // Larger than the 64 KiB limit: refused by the layer before the handler reads it.
    let huge = json!({"agent": AGENT, "input": "x".repeat(100 * 1024)}).to_string();
    let r = post(s.base, "/v1/runs", &alice(), &huge).await;
    assert_eq!((r.status, r.code().as_str()), (413, "body_too_large"), "{}", r.body);
    let r = call(s.base, "POST", "/v1/runs", &[dev(&alice())], None).await;
    assert_eq!((r.status, r.code().as_str()), (415, "unsupported_media_type"));
    let r = post(s.base, "/v1/runs", &alice(), r#"{"agent": "Nobody", "input": "hi"}"#).await;
    assert_eq!((r.status, r.code().as_str()), (404, "unknown_agent"));
    let r = post(s.base, "/v1/runs", &alice(), r#"{"agent": "Desk", "input": "hi", "extra": 1}"#).await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_request"));
    let r = post(s.base, "/v1/runs", &alice(), r#"{"agent": "Desk", "input": "hi", "session_id": "a b"}"#).await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_request"));
    let r = get(s.base, "/v1/nothing", &alice()).await;
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"));
    let r = call(s.base, "DELETE", "/v1/runs", &[dev(&alice())], None).await;
    assert_eq!((r.status, r.code().as_str()), (405, "method_not_allowed"));
    let r = call(s.base, "GET", "/v1/runs", &[], None).await;
    assert_eq!((r.status, r.code().as_str()), (401, "missing_token"));
    assert!(r.headers.contains_key("www-authenticate"));
    let r = call(s.base, "GET", "/v1/runs", &[("x-dev-principal".into(), "alice/acme".into())], None).await;
    assert_eq!((r.status, r.code().as_str()), (401, "invalid_token"));
    let r = get(s.base, "/v1/runs/none", &alice()).await;
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"));
    // Nothing of the refused starts ran.
    assert!(s.audit.records().is_empty(), "{:#?}", s.audit.records());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_development_login_refuses_everything_unless_enabled() {
    let s = serve_with(std::sync::Arc::new(agents_service::DevAuthenticator::disabled()), limits(), None).await;
    let r = get(s.base, "/v1/agents", &alice()).await;
    assert_eq!((r.status, r.code().as_str()), (401, "dev_login_disabled"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_queries_filter_like_the_cli_and_verify_for_reviewers() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "audit-1", "submit a request").await;
    let call = pending_call(s.base, &alice()).await;
    post(s.base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "approve"}"#).await;
    ended(s.base, &alice(), &run).await;
    let bob_run = start(s.base, &bob(), "audit-2", "lookup it").await;
    ended(s.base, &bob(), &bob_run).await;

    let q = get(s.base, "/v1/audit?tool=submit_item&status=executed", &alice()).await.json();
    let recs = q["records"].as_array().unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["call_id"], call.as_str());
    // The record keeps the argument's name and a keyed digest, and the answer says so.
    assert!(recs[0]["args"]["item"]["hmac_sha256"].is_string(), "{}", recs[0]);
    assert_eq!(q["values_omitted"], serde_json::json!([recs[0]["seq"]]), "{q}");
    let started = get(s.base, &format!("/v1/audit?run={run}&status=run_started"), &alice()).await.json();
    assert_eq!(started["values_omitted"], serde_json::json!([]), "a record without arguments omits nothing");
    // Alice reads only her own records, the auditor the organisation's.
    let mine = get(s.base, "/v1/audit", &alice()).await.json();
    assert!(mine["records"].as_array().unwrap().iter().all(|r| r["user_id"] == "alice"));
    let all = get(s.base, "/v1/audit?tier=read", &audrey()).await.json();
    assert!(all["records"].as_array().unwrap().iter().any(|r| r["user_id"] == "bob"));
    // Paging: one at a time, in order, to the end.
    let mut seqs = Vec::new();
    let mut after = 0;
    loop {
        let page = get(s.base, &format!("/v1/audit?limit=1&after={after}&run={run}"), &alice()).await.json();
        let recs = page["records"].as_array().unwrap().clone();
        seqs.extend(recs.iter().map(|r| r["seq"].as_u64().unwrap()));
        match page["next_after"].as_u64() {
            Some(n) => after = n,
            None => break,
        }
    }
    let direct = get(s.base, &format!("/v1/audit?run={run}"), &alice()).await.json();
    let expected: Vec<u64> = direct["records"].as_array().unwrap().iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, expected);
    for bad in ["status=done", "tier=write", "since=yesterday", "limit=0", "limit=5000", "colour=red"] {
        let r = get(s.base, &format!("/v1/audit?{bad}"), &alice()).await;
        assert_eq!((r.status, r.code().as_str()), (400, "invalid_request"), "{bad}");
    }
    let r = get(s.base, "/v1/audit/verify", &alice()).await;
    assert_eq!((r.status, r.code().as_str()), (403, "reviewer_only"));
    let v = get(s.base, "/v1/audit/verify", &audrey()).await.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["records"].as_u64().unwrap() as usize, s.audit.records().len());
    assert_eq!(v["severe"]["total"], 0, "{v}");
    // An action executed with no approval (a writer that let a call past the gate, sealed
    // into the chain as the sink does): the chain holds, the severe failure is counted.
    let mut forged = s
        .audit
        .records()
        .into_iter()
        .find(|r| r.status == AuditStatus::Executed && r.call_id.as_deref() == Some(call.as_str()))
        .unwrap();
    forged.call_id = Some("forged-1".into());
    agents_runtime::audit::AuditSink::append(&*s.audit, forged).await.unwrap();
    let v = get(s.base, "/v1/audit/verify", &audrey()).await.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["severe"]["total"], 1, "{v}");
    assert_eq!(v["severe"]["by_kind"]["action_without_approval"], 1, "{v}");
    assert_eq!(v["severe"]["failures"][0]["call_id"], "forged-1", "{v}");
    assert_eq!(v["severe"]["failures"][0]["tool"], "submit_item", "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_events_of_a_run_are_its_durable_records() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "restart-1", "lookup it").await;
    ended(s.base, &alice(), &run).await;
    // A second service process over the same audit log and state: it never held the run.
    let second = serve_with(
        std::sync::Arc::new(agents_service::DevAuthenticator::enabled()),
        limits(),
        Some((s.audit.clone(), s.runtime.clone())),
    )
    .await;
    let events = open(second.base, &run, &alice(), Some(3)).await.rest().await;
    let records: Vec<_> = events.iter().filter(|e| e.event == "record").collect();
    let expected = s.audit.records().iter().filter(|r| *r.run_id == *run).count();
    assert_eq!(records.len(), expected);
    assert!(records.iter().any(|e| e.json()["status"] == "executed"));
    assert_eq!(events.last().unwrap().event, "end");
    assert_eq!(events.last().unwrap().json()["code"], "run_not_live");
    let st = open(second.base, &run, &bob(), None).await;
    assert_eq!(st.status, 404);
    assert!(s.audit.records().iter().any(|r| r.status == AuditStatus::Denied && *r.user_id == *"bob"));
}

use agents_runtime::Principal;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_stream_ends_after_the_idle_timeout_and_resumes() {
    let mut l = limits();
    l.sse_idle_timeout = std::time::Duration::from_millis(300);
    l.sse_keep_alive = std::time::Duration::from_millis(100);
    let s = serve(l).await;
    let agents = get(s.base, "/v1/agents", &alice()).await.json();
    assert_eq!(agents["agents"][0]["name"], AGENT);
    let run = start(s.base, &alice(), "idle-1", "submit a request").await;
    let mut stream = open(s.base, &run, &alice(), None).await;
    let seen = stream.until("confirm_required").await;
    // The run waits for a decision: nothing more comes, so the stream ends with `idle`.
    let rest = stream.rest().await;
    let last = rest.last().expect("an idle event");
    assert_eq!((last.event.as_str(), last.json()["code"].as_str()), ("idle", Some("idle_timeout")), "{rest:?}");
    assert!(rest.iter().all(|e| e.event == "idle" || e.id.is_some()));
    // Its place is given back and it resumes where it was.
    let last_id = rest.iter().rev().find_map(|e| e.id).unwrap_or(seen.last().unwrap().id.unwrap());
    let call_id = seen.last().unwrap().json()["call_id"].as_str().unwrap().to_owned();
    post(s.base, &format!("/v1/decisions/{call_id}"), &alice(), r#"{"verdict": "reject"}"#).await;
    let after = open(s.base, &run, &alice(), Some(last_id)).await.rest().await;
    assert_eq!(after.first().unwrap().id, Some(last_id + 1));
    assert_eq!(after.last().unwrap().event, "done");
}

/// The audit reader of the next test: counts how often the log is read through.
struct CountingReader {
    inner: std::sync::Arc<agents_runtime::audit::MemorySink>,
    passes: std::sync::atomic::AtomicUsize,
}

impl agents_service::AuditReader for CountingReader {
    fn scan(
        &self,
        each: &mut dyn FnMut(&agents_runtime::audit::AuditRecord) -> std::ops::ControlFlow<()>,
    ) -> Result<(), agents_service::AuditReadError> {
        self.passes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.scan(each)
    }
    fn verify(
        &self,
    ) -> Result<
        Result<agents_runtime::audit::ChainSummary, agents_runtime::audit::ChainError>,
        agents_service::AuditReadError,
    > {
        self.passes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        agents_service::AuditReader::verify(&*self.inner)
    }
    fn verify_each(
        &self,
        each: &mut dyn FnMut(&agents_runtime::audit::AuditRecord),
    ) -> Result<
        Result<agents_runtime::audit::ChainSummary, agents_runtime::audit::ChainError>,
        agents_service::AuditReadError,
    > {
        self.passes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.verify_each(each)
    }
}

/// `GET /v1/audit/verify` reads the log once: the chain's verdict and the severe failures
/// come from one pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifying_the_audit_log_reads_it_once() {
    use std::sync::Arc;
    let audit = Arc::new(agents_runtime::audit::MemorySink::new());
    let reader = Arc::new(CountingReader { inner: audit.clone(), passes: Default::default() });
    let runtime = agents_runtime::Runtime::builder(audit.clone(), Arc::new(test_model())).roles(roles()).build();
    let service = agents_service::Service::builder(
        Arc::new(agents_service::DevAuthenticator::enabled()),
        audit.clone(),
        reader.clone(),
    )
    .agent::<Desk>(runtime)
    .limits(limits())
    .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    let router = service.router();
    tokio::spawn(async move { agents_service::axum::serve(listener, router).await.unwrap() });
    let run = start(base, &alice(), "verify-once", "lookup it").await;
    ended(base, &alice(), &run).await;
    let before = reader.passes.load(std::sync::atomic::Ordering::SeqCst);
    let v = get(base, "/v1/audit/verify", &audrey()).await.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["records"].as_u64().unwrap() as usize, audit.records().len(), "{v}");
    assert_eq!(v["severe"]["total"], 0, "{v}");
    assert_eq!(reader.passes.load(std::sync::atomic::Ordering::SeqCst) - before, 1, "one pass over the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_ended_only_by_its_own_user_and_its_waiting_action_ends_with_it() {
    let s = serve(limits()).await;
    let run = start(s.base, &alice(), "end-1", "submit a request").await;
    let call_id = pending_call(s.base, &alice()).await;
    let base = s.base;
    let delete =
        move |who: Principal| async move { call(base, "DELETE", "/v1/sessions/end-1", &[dev(&who)], None).await };
    // Bob, with his own valid identity, learns nothing and changes nothing.
    let r = delete(bob()).await;
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"), "{}", r.body);
    let r = delete(carol()).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(get(s.base, "/v1/decisions", &alice()).await.json()["decisions"][0]["call_id"], call_id.as_str());
    // Alice ends it: the action waiting in it ends, nothing ran, and it cannot be approved now.
    let r = delete(alice()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["ended"], true);
    // Its run goes on without the action (the model is told it did not run).
    ended(s.base, &alice(), &run).await;
    let late = post(s.base, &format!("/v1/decisions/{call_id}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(late.status, 404, "{}", late.body);
    s.runtime.records_settled().await;
    assert_eq!(executed("end-1"), 0);
    let statuses: Vec<AuditStatus> = records_of(&s.audit, &call_id).iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    // Once ended there is nothing left to end.
    assert_eq!(delete(alice()).await.status, 404);
}
