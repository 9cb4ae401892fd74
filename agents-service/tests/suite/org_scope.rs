//! What one principal can learn of another's, over real loopback HTTP: a reviewer's
//! verification shows only their organisation (its records, its latest record, its severe
//! failures), and session ids are each principal's own (another user's id answers exactly as
//! an unused one, and the owner's session is untouched).

use crate::common::{
    AGENT, alice, audrey, bob, call, carol, dev, ended, executed, get, pending_call, post, serve, start,
};
use agents_runtime::Principal;
use agents_runtime::audit::{AuditSink, AuditStatus};
use agents_service::ServiceLimits;

fn gina() -> Principal {
    Principal::new("gina", "globex", "auditor")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_verifies_only_their_organisation() {
    let s = serve(ServiceLimits::default()).await;
    let run = start(s.base, &alice(), "acme-1", "submit a request").await;
    let call_id = pending_call(s.base, &alice()).await;
    let r = post(s.base, &format!("/v1/decisions/{call_id}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    ended(s.base, &alice(), &run).await;
    let run = start(s.base, &carol(), "globex-1", "lookup it").await;
    ended(s.base, &carol(), &run).await;
    // A severe failure in acme: an action executed with no approval, sealed into the chain.
    let mut forged = s
        .audit
        .records()
        .into_iter()
        .find(|r| r.status == AuditStatus::Executed && r.call_id.as_deref() == Some(call_id.as_str()))
        .unwrap();
    forged.call_id = Some("forged-acme-1".into());
    forged.reason = Some("acme-secret-detail".into());
    s.audit.append(forged).await.unwrap();
    let all = s.audit.records();
    let of = |org: &str| all.iter().filter(|r| &*r.org_id == org).collect::<Vec<_>>();
    let (acme, globex) = (of("acme"), of("globex"));
    assert!(!globex.is_empty() && acme.len() > globex.len());

    let r = get(s.base, "/v1/audit/verify", &gina()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["org"], "globex");
    assert_eq!(v["records"].as_u64().unwrap() as usize, globex.len(), "only globex's count: {v}");
    let last = globex.last().unwrap();
    assert_eq!(v["head"]["seq"], last.seq, "{v}");
    assert_eq!(v["head"]["hash"], last.hash.as_str(), "{v}");
    assert_eq!(v["severe"]["total"], 0, "{v}");
    assert!(v["severe"]["failures"].as_array().unwrap().is_empty(), "{v}");
    for leak in ["forged-acme-1", "acme-secret-detail", "acme", &call_id, &all.last().unwrap().hash] {
        assert!(!r.body.contains(leak), "globex's reviewer sees `{leak}`: {}", r.body);
    }
    assert!(v.get("last_hash").is_none() && v.get("broken_at").is_none(), "{v}");

    let v = get(s.base, "/v1/audit/verify", &audrey()).await.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["records"].as_u64().unwrap() as usize, acme.len(), "{v}");
    assert_eq!(v["severe"]["total"], 1, "{v}");
    assert_eq!(v["severe"]["failures"][0]["call_id"], "forged-acme-1", "{v}");
    assert_eq!(v["head"]["seq"], acme.last().unwrap().seq, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_session_id_answers_as_an_unused_one_and_the_owners_session_is_untouched() {
    let s = serve(ServiceLimits::default()).await;
    // Alice's session `abc` waits on her decision.
    let alices = start(s.base, &alice(), "abc", "submit a request").await;
    let call_id = pending_call(s.base, &alice()).await;
    let card = get(s.base, "/v1/decisions", &alice()).await.json();
    assert_eq!(card["decisions"][0]["session_id"], "abc", "the card names the session as Alice did: {card}");

    // Bob ends `abc` and a session nobody ever used: the same answer, word for word.
    let end = |id: &'static str| async move {
        call(s.base, "DELETE", &format!("/v1/sessions/{id}"), &[dev(&bob())], None).await
    };
    let (taken, unused) = (end("abc").await, end("never-used").await);
    assert_eq!(
        (taken.status, taken.body.replace("abc", "ID")),
        (unused.status, unused.body.replace("never-used", "ID"))
    );
    assert_eq!(taken.status, 404, "{}", taken.body);
    // Bob starts runs in `abc` and in an unused id: both are his own new sessions.
    let run_in = |id: &'static str| async move {
        let body = serde_json::json!({"agent": AGENT, "input": "lookup it", "session_id": id}).to_string();
        post(s.base, "/v1/runs", &bob(), &body).await
    };
    let (taken, unused) = (run_in("abc").await, run_in("fresh-1").await);
    assert_eq!((taken.status, unused.status), (201, 201), "{} / {}", taken.body, unused.body);
    let keys = |r: &crate::common::Reply| r.json().as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&taken), keys(&unused));
    assert_eq!(taken.json()["session_id"], "abc");
    ended(s.base, &bob(), taken.json()["run_id"].as_str().unwrap()).await;
    assert!(get(s.base, "/v1/decisions", &bob()).await.json()["decisions"].as_array().unwrap().is_empty());
    // Nothing of Alice's session reached Bob: his `abc` records are his own.
    let q = get(s.base, "/v1/audit?session=abc", &bob()).await.json();
    let mine = q["records"].as_array().unwrap();
    assert!(!mine.is_empty() && mine.iter().all(|r| r["user_id"] == "bob"), "{q}");
    assert!(
        !s.audit.records().iter().any(|r| &*r.user_id == "bob" && r.status == AuditStatus::Denied),
        "nothing was refused, so nothing tells Bob the id is taken"
    );

    // Alice's session is as she left it: her decision waits, and approving it runs it there.
    assert_eq!(pending_call(s.base, &alice()).await, call_id);
    let r = post(s.base, &format!("/v1/decisions/{call_id}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    ended(s.base, &alice(), &alices).await;
    assert_eq!(executed("abc"), 1);
    let q = get(s.base, "/v1/audit?session=abc", &alice()).await.json();
    let hers = q["records"].as_array().unwrap();
    assert!(hers.iter().any(|r| r["status"] == "executed") && hers.iter().all(|r| r["user_id"] == "alice"), "{q}");
    // And she can still end it.
    let r = call(s.base, "DELETE", "/v1/sessions/abc", &[dev(&alice())], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
}
