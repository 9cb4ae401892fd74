//! What every store must do, run against each implementation, and the races run between two
//! handles ("nodes") of one database.

#![allow(dead_code, unreachable_pub)]

use agents_runtime::audit::{AuditSink, AuditStatus};
use agents_runtime::store::{
    DecideOutcome, ProposalCursor, ProposalRecord, ProposalState, Redeemed, SessionRecord, SessionSaved, SlotOwner,
    Store, StoreAuditSink, StoreError, StoredVerdict, TokenGrant,
};
use agents_store::testing::sample_record;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

pub const LONG: Duration = Duration::from_secs(600);
const START: ProposalCursor = ProposalCursor::START;

/// Every proposal of a listing (`unsettled`, or with `stale` `stale_claims`, with `within` the
/// window or lease), read `per_page` at a time from the start: each page goes on after the one
/// before (a full page says where), and the last one is short.
async fn every_page(store: &dyn Store, stale: bool, per_page: u32, within: Duration) -> Vec<ProposalState> {
    let (mut all, mut after) = (Vec::new(), START);
    loop {
        let found = if stale {
            store.stale_claims(after, per_page, within).await.unwrap()
        } else {
            store.unsettled(after, per_page, within).await.unwrap()
        };
        assert!(found.proposals.len() <= per_page as usize, "at most the limit");
        assert_eq!(found.next.is_some(), found.proposals.len() == per_page as usize, "a full page goes on");
        all.extend(found.proposals);
        match found.next {
            Some(next) => {
                assert!(next > after, "the cursor moves on");
                after = next;
            }
            None => return all,
        }
    }
}

/// A lease or lifetime that the tests wait out (long enough that a loaded machine does not
/// outlast it between two steps that must both fall within it).
pub const SHORT: Duration = Duration::from_secs(1);

pub fn grant(id: &str, session: &str) -> TokenGrant {
    TokenGrant { id: id.into(), session_id: session.into(), tool: "submit_leave".into(), args_mac: "mac-1".into() }
}

pub fn owner(user: &str) -> SlotOwner {
    SlotOwner { org_id: "org-a".into(), user_id: user.into() }
}

pub fn proposal(call_id: &str, user: &str) -> ProposalRecord {
    ProposalRecord {
        call_id: call_id.into(),
        run_id: "run-1".into(),
        session_id: "s-1".into(),
        org_id: "org-a".into(),
        user_id: user.into(),
        tool: "submit_leave".into(),
        title: "Submit leave".into(),
        args: json!({"days": 3, "note": "für Ärztin"}),
        args_mac: "mac-1".into(),
        detail: json!({"role": "employee"}),
        seal: format!("proposed-{call_id}"),
    }
}

pub fn session(id: &str, user: &str, turn: u32) -> SessionRecord {
    SessionRecord {
        session_id: id.into(),
        org_id: "org-a".into(),
        user_id: user.into(),
        role: "clerk".into(),
        history: json!([{"role": "user", "content": format!("turn {turn}")}]),
        digest: json!([{"tool": "chart.read", "result": "ok"}]),
        pending: json!({"call_id": format!("call-{turn}")}),
        version: 0,
    }
}

/// `session(..)` as written over revision `version`.
pub fn session_at(id: &str, user: &str, turn: u32, version: u64) -> SessionRecord {
    SessionRecord { version, ..session(id, user, turn) }
}

fn taken(r: &Redeemed) -> bool {
    matches!(r, Redeemed::Taken { .. })
}

/// Every method's contract, on one handle.
pub async fn conformance(store: &dyn Store) {
    tokens(store).await;
    slots(store).await;
    proposals(store).await;
    settlement(store).await;
    sessions(store).await;
    audit(store).await;
}

async fn tokens(store: &dyn Store) {
    store.mint_token(&grant("t1", "s1"), LONG).await.unwrap();
    assert!(matches!(store.mint_token(&grant("t1", "s2"), LONG).await, Err(StoreError::Invalid(_))), "ids are unique");
    let first = store.redeem_token("t1").await.unwrap();
    assert_eq!(
        first,
        Redeemed::Taken { grant: grant("t1", "s1"), expired: false },
        "the duplicate mint changed nothing"
    );
    assert_eq!(store.redeem_token("t1").await.unwrap(), Redeemed::Unknown, "single use");
    assert_eq!(store.redeem_token("never").await.unwrap(), Redeemed::Unknown);

    store.mint_token(&grant("t2", "s1"), SHORT).await.unwrap();
    store.mint_token(&grant("t3", "s1"), LONG).await.unwrap();
    store.mint_token(&grant("t4", "s9"), LONG).await.unwrap();
    tokio::time::sleep(SHORT * 2).await;
    assert_eq!(store.redeem_token("t2").await.unwrap(), Redeemed::Taken { grant: grant("t2", "s1"), expired: true });
    store.mint_token(&grant("t5", "s1"), SHORT).await.unwrap();
    tokio::time::sleep(SHORT * 2).await;
    // t5 expired (t1 and t2 are used up, which a store may have dropped at once); t3 and t4 live.
    assert!(store.prune_tokens().await.unwrap() >= 1);
    assert_eq!(store.redeem_token("t5").await.unwrap(), Redeemed::Unknown, "pruned");
    assert_eq!(store.revoke_session_tokens("s1").await.unwrap(), 1);
    assert_eq!(store.redeem_token("t3").await.unwrap(), Redeemed::Unknown, "revoked with its session");
    assert!(taken(&store.redeem_token("t4").await.unwrap()), "another session's token is kept");
}

async fn slots(store: &dyn Store) {
    let ann = owner("ann");
    let a = store.acquire_slot(&ann, 2, LONG).await.unwrap().expect("first slot");
    let b = store.acquire_slot(&ann, 2, LONG).await.unwrap().expect("second slot");
    assert_eq!(store.acquire_slot(&ann, 2, LONG).await.unwrap(), None, "the third is refused under a cap of 2");
    assert!(store.acquire_slot(&owner("bob"), 2, LONG).await.unwrap().is_some(), "the cap is per user");
    assert_eq!(store.active_slots(&ann).await.unwrap(), 2);
    store.release_slot(&a).await.unwrap();
    store.release_slot(&a).await.unwrap();
    assert_eq!(store.active_slots(&ann).await.unwrap(), 1);
    assert!(store.acquire_slot(&ann, 2, LONG).await.unwrap().is_some(), "a released slot is free again");
    store.release_slot(&b).await.unwrap();

    let cid = owner("cid");
    let short = store.acquire_slot(&cid, 1, SHORT).await.unwrap().expect("slot");
    assert!(store.renew_slot(&short, SHORT).await.unwrap());
    assert_eq!(store.acquire_slot(&cid, 1, LONG).await.unwrap(), None);
    tokio::time::sleep(SHORT * 2).await;
    assert_eq!(store.active_slots(&cid).await.unwrap(), 0, "a lease not renewed lapses");
    assert!(store.acquire_slot(&cid, 1, LONG).await.unwrap().is_some(), "its place is free");
    assert!(!store.renew_slot(&short, SHORT).await.unwrap(), "a lapsed slot whose place was taken stays gone");
}

async fn proposals(store: &dyn Store) {
    store.put_proposal(&proposal("c1", "ann")).await.unwrap();
    store.put_proposal(&proposal("c2", "ann")).await.unwrap();
    store.put_proposal(&proposal("c3", "bob")).await.unwrap();
    assert!(matches!(store.put_proposal(&proposal("c1", "bob")).await, Err(StoreError::Invalid(_))));
    let pending: Vec<_> = store.pending_for("org-a", "ann").await.unwrap().into_iter().map(|p| p.call_id).collect();
    assert_eq!(pending, ["c1", "c2"], "a user's own undecided proposals, oldest first");
    assert_eq!(store.proposal("c1").await.unwrap().unwrap().proposal, proposal("c1", "ann"));

    assert!(!store.claim_execution("c1", "n1", "").await.unwrap(), "an undecided call cannot be claimed");
    let d = |call, org, user, v| store.decide(call, org, user, v, None, "decided");
    assert_eq!(d("c1", "org-a", "bob", StoredVerdict::Approved).await.unwrap(), DecideOutcome::NotYours);
    assert_eq!(d("c1", "org-b", "ann", StoredVerdict::Approved).await.unwrap(), DecideOutcome::NotYours);
    assert_eq!(d("zz", "org-a", "ann", StoredVerdict::Approved).await.unwrap(), DecideOutcome::Unknown);
    let c1 = store.proposal("c1").await.unwrap().unwrap();
    assert_eq!((c1.verdict, c1.proposal.seal.as_str()), (None, "proposed-c1"), "a refused decision changed nothing");
    assert_eq!(d("c1", "org-a", "ann", StoredVerdict::Approved).await.unwrap(), DecideOutcome::Recorded);
    assert_eq!(d("c1", "org-a", "ann", StoredVerdict::Rejected).await.unwrap(), DecideOutcome::AlreadyDecided);
    let rejected = store.decide("c2", "org-a", "ann", StoredVerdict::Rejected, Some("not today"), "").await.unwrap();
    assert_eq!(rejected, DecideOutcome::Recorded);
    assert!(store.pending_for("org-a", "ann").await.unwrap().is_empty());

    // The store keeps the seal each transition gives it, and only a transition's.
    assert_eq!(store.proposal("c1").await.unwrap().unwrap().proposal.seal, "decided");
    assert!(store.claim_execution("c1", "n1", "claimed-n1").await.unwrap());
    assert!(!store.claim_execution("c1", "n2", "claimed-n2").await.unwrap(), "one claim");
    assert!(!store.claim_execution("c2", "n1", "claimed-n1").await.unwrap(), "a rejected call cannot be claimed");
    let c1 = store.proposal("c1").await.unwrap().unwrap();
    assert_eq!((c1.verdict, c1.claimed_by.as_deref()), (Some(StoredVerdict::Approved), Some("n1")));
    assert_eq!(c1.proposal.seal, "claimed-n1", "a refused claim changed nothing");
    let c2 = store.proposal("c2").await.unwrap().unwrap();
    assert_eq!((c2.verdict, c2.reason.as_deref()), (Some(StoredVerdict::Rejected), Some("not today")));

    // One lookup for many waiting calls: the decided ones, as stored; undecided and unknown
    // ids left out.
    let asked = ["c3", "c2", "zz", "c1"].map(String::from);
    let mut decided = store.decided(&asked).await.unwrap();
    decided.sort_by(|x, y| x.proposal.call_id.cmp(&y.proposal.call_id));
    assert_eq!(decided, [c1, c2], "the decided proposals among those asked");
    assert!(store.decided(&[]).await.unwrap().is_empty());
}

/// Every proposal's final record is claimed once: a rejection's, an undecided proposal's
/// ending (rejected and claimed in one step), an approval's execution; what nobody claimed
/// is listed as unsettled; what is over goes after the retention, and nothing else does.
async fn settlement(store: &dyn Store) {
    for id in ["st-rejected", "st-open", "st-approved", "st-young"] {
        store.put_proposal(&proposal(id, "dora")).await.unwrap();
    }
    let ids = |found: Vec<agents_runtime::store::ProposalState>| -> Vec<String> {
        found.into_iter().map(|p| p.proposal.call_id).filter(|id| id.starts_with("st-")).collect()
    };
    assert!(
        !store.claim_settlement("st-open", "n1").await.unwrap(),
        "an undecided proposal has no rejection to record"
    );
    store.decide("st-rejected", "org-a", "dora", StoredVerdict::Rejected, Some("wrong week"), "").await.unwrap();
    store.decide("st-approved", "org-a", "dora", StoredVerdict::Approved, None, "").await.unwrap();
    assert!(!store.claim_settlement("st-approved", "n1").await.unwrap(), "an approval is claimed for execution");
    assert_eq!(
        ids(store.unsettled(START, 100, LONG).await.unwrap().proposals),
        ["st-rejected", "st-approved"],
        "young undecided ones wait"
    );
    tokio::time::sleep(SHORT * 2).await;
    store.put_proposal(&proposal("st-late", "dora")).await.unwrap();
    assert_eq!(
        ids(store.unsettled(START, 100, SHORT).await.unwrap().proposals),
        ["st-rejected", "st-open", "st-approved", "st-young"],
        "undecided ones past the window are listed, oldest first"
    );
    assert_eq!(store.unsettled(START, 2, SHORT).await.unwrap().proposals.len(), 2, "at most the limit");
    for per_page in [1, 2, 3] {
        assert_eq!(
            ids(every_page(store, false, per_page, SHORT).await),
            ["st-rejected", "st-open", "st-approved", "st-young"],
            "page by page ({per_page} at a time), the same listing"
        );
    }

    assert!(store.claim_settlement("st-rejected", "n1").await.unwrap());
    assert!(!store.claim_settlement("st-rejected", "n2").await.unwrap(), "one claim");
    let rejected = store.proposal("st-rejected").await.unwrap().unwrap();
    assert_eq!((rejected.settled_by.as_deref(), rejected.reason.as_deref()), (Some("n1"), Some("wrong week")));

    assert!(!store.close_undecided("st-rejected", "n2", "timeout: late").await.unwrap(), "decided already");
    assert!(store.close_undecided("st-open", "n2", "timeout: no decision").await.unwrap());
    assert!(!store.close_undecided("st-open", "n3", "timeout: again").await.unwrap(), "ended once");
    let open = store.proposal("st-open").await.unwrap().unwrap();
    assert_eq!(
        (open.verdict, open.reason.as_deref(), open.settled_by.as_deref()),
        (Some(StoredVerdict::Rejected), Some("timeout: no decision"), Some("n2"))
    );
    let late = store.decide("st-open", "org-a", "dora", StoredVerdict::Approved, None, "").await.unwrap();
    assert_eq!(late, DecideOutcome::AlreadyDecided, "a decision after the ending changes nothing");
    assert!(!store.claim_settlement("st-open", "n3").await.unwrap(), "its record is claimed already");
    assert!(store.claim_execution("st-approved", "n1", "").await.unwrap());
    assert_eq!(
        ids(store.unsettled(START, 100, LONG).await.unwrap().proposals),
        Vec::<String>::new(),
        "every final record is claimed"
    );

    // Claims whose record is not marked written lapse after a lease, and are taken over once
    // per lapse; a marked one never.
    assert_eq!(
        ids(store.stale_claims(START, 100, LONG).await.unwrap().proposals),
        Vec::<String>::new(),
        "young claims hold"
    );
    assert_eq!(
        ids(store.stale_claims(START, 100, Duration::ZERO).await.unwrap().proposals),
        ["st-rejected", "st-open", "st-approved"]
    );
    assert_eq!(store.stale_claims(START, 2, Duration::ZERO).await.unwrap().proposals.len(), 2, "at most the limit");
    assert_eq!(
        ids(every_page(store, true, 1, Duration::ZERO).await),
        ["st-rejected", "st-open", "st-approved"],
        "page by page, the same listing"
    );
    assert!(!store.take_over("st-rejected", "n9", LONG).await.unwrap(), "a young claim is not taken over");
    assert!(!store.take_over("st-young", "n9", Duration::ZERO).await.unwrap(), "nor an unclaimed proposal");
    assert!(store.take_over("st-rejected", "n9", Duration::ZERO).await.unwrap());
    assert!(!store.take_over("st-rejected", "n9", LONG).await.unwrap(), "the take-over restarted the lease");
    let taken = store.proposal("st-rejected").await.unwrap().unwrap();
    assert_eq!(taken.settled_by.as_deref(), Some("n1"), "the claimant's name stays");

    // A claim is renewed by its holder only: its claimant, until another node takes it over.
    assert!(!store.renew_claim("st-rejected", "n1").await.unwrap(), "its claimant lost it to the take-over");
    assert!(store.renew_claim("st-rejected", "n9").await.unwrap(), "the taker holds it");
    assert!(!store.renew_claim("st-open", "n1").await.unwrap(), "nobody but the holder renews a claim");
    assert!(!store.renew_claim("st-young", "n1").await.unwrap(), "an unclaimed proposal has no claim to renew");
    assert!(!store.renew_claim("st-nothing", "n1").await.unwrap(), "nor an unknown one");
    tokio::time::sleep(SHORT * 2).await;
    let stale = |found: Vec<ProposalState>| ids(found).into_iter().filter(|id| id != "st-rejected").collect::<Vec<_>>();
    assert_eq!(stale(store.stale_claims(START, 100, SHORT).await.unwrap().proposals), ["st-open", "st-approved"]);
    assert!(store.renew_claim("st-open", "n2").await.unwrap(), "its claimant holds a claim it closed");
    assert!(store.renew_claim("st-approved", "n1").await.unwrap(), "and one it claimed for execution");
    assert_eq!(
        stale(store.stale_claims(START, 100, SHORT).await.unwrap().proposals),
        Vec::<String>::new(),
        "a renewed claim is not stale"
    );
    assert!(!store.take_over("st-approved", "n9", SHORT).await.unwrap(), "nor taken over");
    for id in ["st-rejected", "st-open", "st-approved"] {
        store.mark_recorded(id).await.unwrap();
    }
    store.mark_recorded("st-nothing").await.unwrap();
    assert_eq!(
        ids(store.stale_claims(START, 100, Duration::ZERO).await.unwrap().proposals),
        Vec::<String>::new(),
        "all marked"
    );
    assert!(!store.take_over("st-open", "n9", Duration::ZERO).await.unwrap(), "a marked claim is never taken over");
    assert!(!store.renew_claim("st-approved", "n1").await.unwrap(), "nor renewed");
    // A record marked written before its claim (a claim that failed after the record) is
    // not listed as unsettled either; a claim never marked is kept past the retention.
    store.put_proposal(&proposal("st-marked", "dora")).await.unwrap();
    store.decide("st-marked", "org-a", "dora", StoredVerdict::Rejected, None, "").await.unwrap();
    store.mark_recorded("st-marked").await.unwrap();
    assert!(!ids(store.unsettled(START, 100, LONG).await.unwrap().proposals).contains(&"st-marked".to_owned()));
    store.put_proposal(&proposal("st-unmarked", "dora")).await.unwrap();
    store.decide("st-unmarked", "org-a", "dora", StoredVerdict::Rejected, None, "").await.unwrap();
    assert!(store.claim_settlement("st-unmarked", "n4").await.unwrap());

    // Over: st-rejected, st-open, st-approved, st-marked. Open: st-young, st-late; claimed and
    // unwritten: st-unmarked.
    assert_eq!(store.prune_proposals(LONG).await.unwrap(), 0, "nothing is over for that long");
    tokio::time::sleep(SHORT * 2).await;
    assert!(store.prune_proposals(SHORT).await.unwrap() >= 4);
    for gone in ["st-rejected", "st-open", "st-approved", "st-marked"] {
        assert_eq!(store.proposal(gone).await.unwrap(), None, "{gone} was pruned");
    }
    for kept in ["st-young", "st-late", "st-unmarked"] {
        assert!(store.proposal(kept).await.unwrap().is_some(), "{kept} is kept");
    }
}

async fn sessions(store: &dyn Store) {
    let stored = |version| SessionSaved::Stored { version };
    assert_eq!(store.save_session(&session("s1", "ann", 1), LONG).await.unwrap(), stored(1));
    assert_eq!(store.save_session(&session_at("s1", "ann", 2, 1), LONG).await.unwrap(), stored(2));
    assert_eq!(store.save_session(&session_at("s1", "bob", 3, 2), LONG).await.unwrap(), SessionSaved::NotYours);
    // A writer of a revision the store no longer holds, or creating a live session: refused.
    assert_eq!(store.save_session(&session_at("s1", "ann", 3, 1), LONG).await.unwrap(), SessionSaved::Conflict);
    assert_eq!(store.save_session(&session("s1", "ann", 3), LONG).await.unwrap(), SessionSaved::Conflict);
    assert_eq!(
        store.load_session("s1", LONG).await.unwrap(),
        Some(session_at("s1", "ann", 2, 2)),
        "the refused saves changed nothing"
    );
    assert_eq!(store.load_session("nope", LONG).await.unwrap(), None);
    assert_eq!(store.save_session(&session_at("nope", "ann", 1, 4), LONG).await.unwrap(), SessionSaved::Conflict);
    assert_eq!(store.load_session("nope", LONG).await.unwrap(), None, "a dropped session is not recreated");
    store.save_session(&session("old", "ann", 1), LONG).await.unwrap();
    store.save_session(&session("idle", "ann", 1), LONG).await.unwrap();
    tokio::time::sleep(SHORT * 2).await;
    store.save_session(&session_at("s1", "ann", 4, 2), LONG).await.unwrap();
    assert_eq!(store.load_session("old", SHORT).await.unwrap(), None, "idle longer than the timeout");
    // An idle session is replaced by a fresh one of its owner, never taken by another user.
    assert_eq!(store.save_session(&session("idle", "bob", 1), SHORT).await.unwrap(), SessionSaved::NotYours);
    assert_eq!(store.save_session(&session("idle", "ann", 5), SHORT).await.unwrap(), stored(2));
    assert_eq!(store.prune_sessions(SHORT).await.unwrap(), 1);
    assert_eq!(store.load_session("old", LONG).await.unwrap(), None, "pruned");
    assert!(store.load_session("s1", SHORT).await.unwrap().is_some(), "a used session is kept");
    assert!(store.delete_session("s1").await.unwrap());
    assert!(!store.delete_session("s1").await.unwrap());
}

/// Two nodes write the same revision of one session at once, many times over: exactly one
/// of each pair stores, the other is told of the conflict, and no write is lost silently.
pub async fn race_session_saves(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let id = format!("race-{}", uuid::Uuid::new_v4().simple());
    assert_eq!(a.save_session(&session(&id, "ann", 0), LONG).await.unwrap(), SessionSaved::Stored { version: 1 });
    for turn in 1..=20u32 {
        let held = a.load_session(&id, LONG).await.unwrap().expect("held");
        let (mine, theirs) =
            (session_at(&id, "ann", turn, held.version), session_at(&id, "ann", 100 + turn, held.version));
        let (x, y) = futures::join!(a.save_session(&mine, LONG), b.save_session(&theirs, LONG));
        let (x, y) = (x.unwrap(), y.unwrap());
        let won: Vec<_> = [x, y].into_iter().filter(|s| matches!(s, SessionSaved::Stored { .. })).collect();
        assert_eq!(won, vec![SessionSaved::Stored { version: held.version + 1 }], "{x:?} {y:?}");
        assert!(x == SessionSaved::Conflict || y == SessionSaved::Conflict, "{x:?} {y:?}");
        let now = b.load_session(&id, LONG).await.unwrap().expect("held");
        let winner = if x == SessionSaved::Conflict { &theirs } else { &mine };
        assert_eq!(now.history, winner.history, "the store holds the winner's write");
    }
}

async fn audit(store: &dyn Store) {
    let first = store.append_audit("clinic", (0..3).map(|i| sample_record(i, "a")).collect()).await.unwrap();
    assert_eq!(first.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(first[0].prev_hash, agents_runtime::audit::GENESIS_HASH);
    let more = store.append_audit("clinic", vec![sample_record(3, "a")]).await.unwrap();
    assert_eq!((more[0].seq, more[0].prev_hash.as_str()), (4, first[2].hash.as_str()));
    store.append_audit("hr", vec![sample_record(9, "a")]).await.unwrap();
    assert_eq!(store.verify_audit("clinic").await.unwrap().records, 4);
    assert_eq!(store.verify_audit("hr").await.unwrap().records, 1, "streams are separate chains");
    assert_eq!(store.verify_audit("none").await.unwrap().records, 0);
    // A final record of a call is found in its stream only (a proposed one is not final).
    let mut done = sample_record(20, "a");
    done.call_id = Some("call-a-1".into());
    done.status = AuditStatus::Rejected;
    store.append_audit("clinic", vec![done]).await.unwrap();
    assert_eq!(store.holds_final("clinic", "call-a-1").await.unwrap(), Some(true));
    assert_eq!(store.holds_final("clinic", "call-a-2").await.unwrap(), Some(false), "only proposed");
    assert_eq!(store.holds_final("hr", "call-a-1").await.unwrap(), Some(false), "another stream");
    assert_eq!(store.holds_final("clinic", "call-a-").await.unwrap(), Some(false), "the whole id");
}

/// What comes back from a race.
pub struct Counts(pub usize);

/// 1,000 concurrent redemptions of one token, half through each node: exactly one succeeds.
pub async fn race_redemptions(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    a.mint_token(&grant("race", "s1"), LONG).await.unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(1000));
    let tasks: Vec<_> = (0..1000)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                store.redeem_token("race").await
            })
        })
        .collect();
    let mut wins = 0;
    for t in tasks {
        wins += usize::from(taken(&t.await.unwrap().unwrap()));
    }
    assert_eq!(wins, 1, "exactly one of 1,000 concurrent redemptions uses the token");
}

/// Rounds of 16 concurrent claims of one run tree's closing, half through each node: exactly
/// one each round, and none after it.
pub async fn race_tree_closes(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    for round in 0..20 {
        let tree = format!("tree-{round}");
        let barrier = Arc::new(tokio::sync::Barrier::new(16));
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let store = if i % 2 == 0 { a.clone() } else { b.clone() };
                let (barrier, tree) = (barrier.clone(), tree.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store.claim_tree_close(&tree, &format!("node-{i}")).await.unwrap()
                })
            })
            .collect();
        let mut wins = 0;
        for t in tasks {
            wins += usize::from(t.await.unwrap());
        }
        assert_eq!(wins, 1, "round {round}: exactly one node closes the tree");
        assert!(!b.claim_tree_close(&tree, "late").await.unwrap(), "round {round}: closed once, ever");
    }
}

/// Rounds of 24 concurrent acquisitions under a cap of 3 over both nodes: exactly 3 each round.
pub async fn race_slots(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    for round in 0..20 {
        let user = owner(&format!("racer-{round}"));
        let barrier = Arc::new(tokio::sync::Barrier::new(24));
        let tasks: Vec<_> = (0..24)
            .map(|i| {
                let store = if i % 2 == 0 { a.clone() } else { b.clone() };
                let (barrier, user) = (barrier.clone(), user.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store.acquire_slot(&user, 3, LONG).await
                })
            })
            .collect();
        let mut held = 0;
        for t in tasks {
            held += usize::from(t.await.unwrap().unwrap().is_some());
        }
        assert_eq!(held, 3, "round {round}: the cap of 3 holds under concurrent acquisitions");
        assert_eq!(a.active_slots(&user).await.unwrap(), 3);
    }
}

/// A proposal made through `a`, decided through `b`, claimed concurrently through both:
/// exactly one claim.
pub async fn proposal_across(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    a.put_proposal(&proposal("across", "ann")).await.unwrap();
    let listed = b.pending_for("org-a", "ann").await.unwrap();
    assert!(listed.iter().any(|p| p.call_id == "across"), "the other node lists it");
    assert_eq!(
        b.decide("across", "org-a", "ann", StoredVerdict::Approved, None, "").await.unwrap(),
        DecideOutcome::Recorded
    );
    assert_eq!(a.proposal("across").await.unwrap().unwrap().verdict, Some(StoredVerdict::Approved));
    let barrier = Arc::new(tokio::sync::Barrier::new(200));
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                store.claim_execution("across", &format!("node-{i}"), "").await
            })
        })
        .collect();
    let mut claims = 0;
    for t in tasks {
        claims += usize::from(t.await.unwrap().unwrap());
    }
    assert_eq!(claims, 1, "exactly one claim to execute");
}

/// A claim left unwritten past its lease, taken over concurrently through both nodes:
/// exactly one take-over.
pub async fn take_over_across(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let lease = Duration::from_millis(400);
    a.put_proposal(&proposal("lapsed", "ann")).await.unwrap();
    b.decide("lapsed", "org-a", "ann", StoredVerdict::Rejected, None, "").await.unwrap();
    assert!(a.claim_settlement("lapsed", "died").await.unwrap());
    tokio::time::sleep(lease * 2).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(100));
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                store.take_over("lapsed", "n9", lease).await
            })
        })
        .collect();
    let mut taken = 0;
    for t in tasks {
        taken += usize::from(t.await.unwrap().unwrap());
    }
    assert_eq!(taken, 1, "exactly one take-over per lapse");
}

/// 8 producers per node append 50 records each through each node's group-committing sink;
/// the stream is then one chain holding all 800.
pub async fn audit_across(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let sinks = [StoreAuditSink::new(a.clone(), "shared"), StoreAuditSink::new(b.clone(), "shared")];
    let tasks: Vec<_> = (0..16)
        .map(|p| {
            let sink = sinks[p % 2].clone();
            tokio::spawn(async move {
                for i in 0..50 {
                    sink.append(sample_record(p * 50 + i, if p % 2 == 0 { "a" } else { "b" })).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(b.verify_audit("shared").await.unwrap().records, 800);
}

/// Resumes the orphaned proposals of the leave agent through `b` and `c` at once until one of
/// them settled something (within `within`); what they did.
pub async fn resume_until_settled(
    b: &agents_runtime::Runtime,
    c: &agents_runtime::Runtime,
    within: Duration,
) -> Vec<agents_runtime::run::ResumedCall> {
    use agents_store::testing::leave::Hr;
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let (from_b, from_c) = tokio::join!(b.resume_orphaned::<Hr>(), c.resume_orphaned::<Hr>());
        let done: Vec<_> = from_b.unwrap().into_iter().chain(from_c.unwrap()).collect();
        if !done.is_empty() {
            return done;
        }
        assert!(tokio::time::Instant::now() < deadline, "nothing was settled within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How often a test agent's tool ran, per session (its body calls [`ExecutionCount::ran`]).
pub struct ExecutionCount(std::sync::Mutex<Option<std::collections::HashMap<String, usize>>>);

impl ExecutionCount {
    /// None yet.
    pub const fn new() -> Self {
        ExecutionCount(std::sync::Mutex::new(None))
    }

    /// Counts one execution in `session`.
    pub fn ran(&self, session: &str) {
        *self.0.lock().unwrap().get_or_insert_with(Default::default).entry(session.to_owned()).or_insert(0) += 1;
    }

    /// How often it ran in `session`.
    pub fn of(&self, session: &str) -> usize {
        self.0.lock().unwrap().as_ref().and_then(|m| m.get(session).copied()).unwrap_or(0)
    }
}
