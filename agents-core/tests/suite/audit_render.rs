//! The record's hand-ordered renderer (`compute_hash`, `to_line`, `PreparedRecord`) against
//! the generic route: serialize the record to a value and write its canonical JSON.

use agents_core::Tier;
use agents_core::audit::{
    AuditImport, AuditRecord, AuditResult, AuditStatus, ChainKey, EpochKey, GENESIS_HASH, PreparedRecord,
};
use agents_core::canonical;
use proptest::prelude::*;
use serde_json::{Value, json};

/// The generic canonical line of a record.
fn generic_line(r: &AuditRecord) -> String {
    canonical::to_string(&serde_json::to_value(r).unwrap())
}

/// The generic hash: canonical JSON of the record without `hash`.
fn generic_hash(r: &AuditRecord) -> String {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("hash");
    canonical::sha256_hex(canonical::to_string(&v).as_bytes())
}

fn record(args: Option<Value>, result: Option<Value>) -> AuditRecord {
    AuditRecord {
        seq: 0,
        ts: "2026-01-01T00:00:00Z".to_owned(),
        run_id: "r".into(),
        session_id: "s".into(),
        request_id: "q".into(),
        call_id: None,
        epoch: None,
        user_id: "u".into(),
        org_id: "o".into(),
        role: "ärztin".into(),
        agent: "a".into(),
        tool: Some("t".into()),
        tier: None,
        status: AuditStatus::Proposed,
        reason: Some("line\nbreak \"quoted\" \u{1}".to_owned()),
        title: None,
        args: args.map(Into::into),
        args_hash: None,
        result: result.map(AuditResult::from),
        import: None,
        manifest_sha256: "m".into(),
        prev_hash: "stale".to_owned(),
        hash: "stale".to_owned(),
        node: None,
    }
}

/// The generic keyed seal: HMAC-SHA-256 of the canonical JSON without `hash` (with `epoch`).
fn generic_mac(r: &AuditRecord, key: &EpochKey) -> String {
    use hmac::Mac;
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("hash");
    assert_eq!(v["epoch"], json!(key.epoch()));
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key.key_bytes()).unwrap();
    mac.update(canonical::to_string(&v).as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

fn check(r: AuditRecord, seq: u64, prev: &str) -> AuditRecord {
    // Keyed: the same text with `epoch`, sealed with the epoch's key.
    let key = ChainKey::from_bytes([5; 32]).key_at(seq % 3);
    let (prepared, line) = PreparedRecord::new(r.clone()).seal_with(seq, prev, Some(&key));
    let mut keyed = r.clone();
    keyed.seal_keyed(seq, prev, &key);
    assert_eq!(prepared, keyed);
    assert_eq!(keyed.epoch, Some(key.epoch()));
    assert_eq!(keyed.hash, generic_mac(&keyed, &key));
    assert_eq!(keyed.compute_mac(&key), keyed.hash);
    assert_ne!(keyed.compute_hash(), keyed.hash);
    assert_eq!(line, generic_line(&keyed));
    assert_eq!(keyed.to_line(), line);

    let (prepared, line) = PreparedRecord::new(r.clone()).seal(seq, prev);
    let mut sealed = r;
    sealed.seal(seq, prev);
    assert_eq!(prepared, sealed);
    assert_eq!(sealed.seq, seq);
    assert_eq!(sealed.prev_hash, prev);
    assert_eq!(sealed.hash, generic_hash(&sealed));
    assert_eq!(sealed.compute_hash(), sealed.hash);
    assert_eq!(line, generic_line(&sealed));
    assert_eq!(sealed.to_line(), line);
    sealed
}

#[test]
fn the_renderer_writes_what_the_generic_route_writes() {
    let mut every_field = record(None, Some(json!({"ok": true})));
    every_field.call_id = Some("c-1".into());
    every_field.tier = Some(Tier::Handoff);
    every_field.title = Some("Überweisen".into());
    every_field.args_hash = Some("ab".repeat(32));
    every_field.status = AuditStatus::HandedOff;
    let cases = [
        every_field,
        // Members named like the chain's own must not confuse the splice.
        record(Some(json!({"hash": 1, "seq": "x", "prev_hash": null})), None),
        record(
            Some(json!({"\u{ff61}": 1, "\u{1f600}": [1e21, 1.5e-7, -0.0, 9007199254740993_u64]})),
            Some(json!({"seq": 2})),
        ),
        record(Some(json!({})), Some(json!([]))),
        record(Some(Value::Null), None),
        // A result's digest, written by the renderer without building a JSON value.
        record(None, Some(json!({"sha256": "0f".repeat(32)}))),
    ];
    let mut prev = GENESIS_HASH.to_owned();
    for (i, r) in cases.into_iter().enumerate() {
        let seq = [1, 2, 3, 4, u64::MAX, 6][i];
        prev = check(r, seq, &prev).hash;
    }
}

#[test]
fn a_changed_member_changes_the_hash() {
    let base = check(record(Some(json!({"days": 3})), None), 1, GENESIS_HASH);
    let mut other = base.clone();
    other.args = Some(json!({"days": 5}).into());
    assert_ne!(check(other, 1, GENESIS_HASH).hash, base.hash);
    let mut other = base.clone();
    other.user_id = "v".into();
    assert_ne!(check(other, 1, GENESIS_HASH).hash, base.hash);
    assert_ne!(check(base.clone(), 2, GENESIS_HASH).hash, base.hash);
    assert_ne!(check(base.clone(), 1, &"1".repeat(64)).hash, base.hash);
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn status() -> impl Strategy<Value = AuditStatus> {
    prop::sample::select(AuditStatus::ALL.to_vec())
}

/// `AuditStatus::ALL` lists every status once, in declaration order, under its own name (a
/// status added in the middle of the enum and not to the list shifts the numbers and fails).
#[test]
fn every_status_is_listed_once_in_order() {
    for (i, s) in AuditStatus::ALL.into_iter().enumerate() {
        assert_eq!(s as usize, i, "{s}");
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        assert_eq!(serde_json::from_value::<AuditStatus>(s.as_str().into()).unwrap(), s);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn any_record_renders_like_the_generic_route(
        strings in prop::collection::vec(any::<String>(), 9),
        optional in prop::collection::vec(prop::option::of(any::<String>()), 8),
        args in prop::option::of(json_value()),
        result in prop::option::of(prop_oneof![
            json_value().prop_map(AuditResult::from),
            any::<[u8; 32]>().prop_map(AuditResult::Sha256),
        ]),
        tier in prop::option::of(prop_oneof![Just(Tier::Read), Just(Tier::Action), Just(Tier::Handoff)]),
        status in status(),
        seq in any::<u64>(),
        prev in any::<String>(),
    ) {
        let r = AuditRecord {
            seq: 0,
            ts: strings[0].clone(),
            run_id: strings[1].clone().into(),
            session_id: strings[2].clone().into(),
            request_id: strings[3].clone().into(),
            call_id: optional[0].clone().map(Into::into),
            epoch: None,
            user_id: strings[4].clone().into(),
            org_id: strings[5].clone().into(),
            role: strings[6].clone().into(),
            agent: strings[7].clone().into(),
            tool: optional[1].clone().map(Into::into),
            tier,
            status,
            reason: optional[2].clone(),
            title: optional[3].clone().map(Into::into),
            args: args.map(Into::into),
            args_hash: optional[4].clone(),
            result,
            import: optional[5].clone().map(|server| AuditImport {
                server,
                source: optional[6].clone(),
                tool: strings[0].clone(),
                sha256: strings[1].clone(),
                listed_sha256: optional[7].clone(),
            }),
            manifest_sha256: strings[8].clone().into(),
            prev_hash: String::new(),
            hash: String::new(),
            node: None,
        };
        check(r, seq, &prev);
    }
}

#[test]
fn only_the_digest_shape_reads_back_as_a_digest() {
    let hex = "0f".repeat(32);
    let digest = AuditResult::from(json!({"sha256": hex}));
    assert_eq!(digest.sha256_hex().as_deref(), Some(hex.as_str()));
    assert_eq!(digest.value(), None);
    assert_eq!(digest.to_value(), json!({"sha256": hex}));
    // Anything else stays a value, so it is written back exactly as it was read.
    for other in [
        json!({"sha256": "0F".repeat(32)}),
        json!({"sha256": "0f".repeat(31)}),
        json!({"sha256": format!("{}zz", "0f".repeat(31))}),
        json!({"sha256": hex, "more": 1}),
        json!({"sha256": 1}),
        json!([hex]),
        json!(hex),
    ] {
        let result = AuditResult::from(other.clone());
        assert_eq!(result.value(), Some(&other), "{other}");
        assert_eq!(result.to_value(), other);
    }
    // A record's JSON reads back to the same record, digest or value.
    for result in [digest, AuditResult::from(json!({"n": 1}))] {
        let r = check(record(None, None), 1, GENESIS_HASH);
        let r = AuditRecord { result: Some(result), ..r };
        let back: AuditRecord = serde_json::from_str(&r.to_line()).unwrap();
        assert_eq!(back, r);
    }
}

/// One record of a sequence: each member either kept from the record before or replaced by one
/// of a few values (some equal to the kept one in text but not shared, some needing escapes).
fn next_record(prev: &AuditRecord, change: &[u8], pick: &[u8]) -> AuditRecord {
    let mut r = prev.clone();
    let text = |k: u8| ["a", "a\"b", "", "\u{1}", "ä", "a\\\"b", "null", "x"][usize::from(k % 8)].to_owned();
    for (i, (&c, &k)) in change.iter().zip(pick).enumerate() {
        if c % 2 == 0 {
            continue;
        }
        match i {
            0 => r.ts = text(k),
            1 => r.run_id = text(k).into(),
            2 => r.session_id = text(k).into(),
            3 => r.request_id = text(k).into(),
            4 => r.call_id = (k % 3 != 0).then(|| text(k).into()),
            5 => r.user_id = text(k).into(),
            6 => r.org_id = text(k).into(),
            7 => r.role = text(k).into(),
            8 => r.agent = text(k).into(),
            9 => r.tool = (k % 3 != 0).then(|| text(k).into()),
            10 => r.tier = [None, Some(Tier::Read), Some(Tier::Action)][usize::from(k % 3)],
            11 => {
                r.status = [AuditStatus::Proposed, AuditStatus::Executed, AuditStatus::Failed][usize::from(k % 3)];
            }
            12 => r.reason = (k % 3 != 0).then(|| text(k)),
            13 => r.title = (k % 3 != 0).then(|| text(k).into()),
            // The same arguments in a new allocation, other arguments, none.
            14 => {
                r.args = match k % 4 {
                    0 => None,
                    1 => prev.args.as_ref().map(|a| a.as_value().clone().into()),
                    2 => Some(json!({"k": text(k)}).into()),
                    _ => Some(json!([text(k), k]).into()),
                }
            }
            15 => r.args_hash = (k % 3 != 0).then(|| text(k)),
            16 => {
                r.result = match k % 3 {
                    0 => None,
                    1 => Some(AuditResult::Sha256([k; 32])),
                    _ => Some(AuditResult::from(json!({"r": text(k)}))),
                }
            }
            17 => {
                r.import = (k % 2 == 1).then(|| AuditImport {
                    server: text(k),
                    source: None,
                    tool: "t".to_owned(),
                    sha256: "0".repeat(64),
                    listed_sha256: None,
                })
            }
            _ => r.manifest_sha256 = text(k).into(),
        }
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Each thread copies the members a record shares with the one it rendered before: a run
    /// of records that keep, share, or change any member in any way renders like the generic
    /// route, record after record.
    #[test]
    fn records_in_a_row_render_like_the_generic_route(
        steps in prop::collection::vec(
            (prop::collection::vec(any::<u8>(), 19), prop::collection::vec(any::<u8>(), 19)),
            1..8,
        ),
    ) {
        let mut r = record(Some(json!({"id": 1, "tags": ["a"]})), None);
        r.call_id = Some("c".into());
        let mut prev_hash = GENESIS_HASH.to_owned();
        // One key seals the whole run, as a writer's does (it keeps the state of the opening
        // a record shares with the one before).
        let key = ChainKey::from_bytes([9; 32]).key_at(2);
        let mut keyed_prev = GENESIS_HASH.to_owned();
        for (seq, (change, pick)) in steps.iter().enumerate() {
            r = next_record(&r, change, pick);
            prev_hash = check(r.clone(), seq as u64 + 1, &prev_hash).hash;
            let (sealed, line) = PreparedRecord::new(r.clone()).seal_with(seq as u64 + 1, &keyed_prev, Some(&key));
            prop_assert_eq!(&sealed.hash, &generic_mac(&sealed, &key));
            prop_assert_eq!(line, generic_line(&sealed));
            keyed_prev = sealed.hash;
        }
    }
}
