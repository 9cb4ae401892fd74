//! Shared by the `audit_*` tests: realistic unsealed records.

#![allow(dead_code, unreachable_pub)]

use agents_runtime::Tier;
use agents_runtime::audit::{AuditRecord, AuditStatus};
use serde_json::json;

/// A manifest hash for test records.
pub const MANIFEST: &str = "5f1c9e0b7a3d2c4e6f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6";

/// An unsealed record whose content depends on `i` and `status`. Some records carry nested
/// arguments, unicode, escapes and numbers in exponent form, so the canonical encoding of
/// every kind of value is exercised.
pub fn record(i: usize, status: AuditStatus) -> AuditRecord {
    let tool = ["chart.read", "orders.place", "ticket.handoff"][i % 3];
    let tier = [Tier::Read, Tier::Action, Tier::Handoff][i % 3];
    AuditRecord {
        seq: 0,
        ts: format!("2026-01-01T00:{:02}:{:02}Z", (i / 60) % 60, i % 60),
        run_id: format!("run-{}", i % 7).into(),
        session_id: format!("session-{}", i % 3).into(),
        request_id: format!("req-{i}").into(),
        call_id: Some(format!("call-{i}").into()),
        epoch: None,
        user_id: "u-ann".into(),
        org_id: "org-clinic".into(),
        role: "nurse".into(),
        agent: "clinic".into(),
        tool: Some(tool.into()),
        tier: Some(tier),
        status,
        reason: i.is_multiple_of(4).then(|| format!("reason \"{i}\"\twith\nescapes")),
        title: (tier == Tier::Action).then(|| "Place an order — für Ärztin".to_owned()).map(Into::into),
        args: Some(
            json!({
                "patient": format!("p-{i}"),
                "fields": ["allergies", "meds", {"nested": [i, -(i as i64), 0.5]}],
                "password": "•••",
                "big": 1e21,
                "tiny": 1.5e-7,
            })
            .into(),
        ),
        args_hash: Some(format!("{:064x}", i * 7919)),
        result: match i % 4 {
            1 | 3 => Some(json!({"ok": true, "n": i, "note": null}).into()),
            2 => Some(agents_runtime::audit::AuditResult::sha256_of(i.to_string().as_bytes())),
            _ => None,
        },
        import: None,
        manifest_sha256: MANIFEST.into(),
        prev_hash: String::new(),
        hash: String::new(),
        node: None,
    }
}

/// `n` records sealed into one chain, and the JSONL text of the chain.
pub fn sealed_chain(n: usize) -> (Vec<AuditRecord>, String) {
    let mut prev = agents_runtime::audit::GENESIS_HASH.to_owned();
    let mut records = Vec::new();
    let mut text = String::new();
    for i in 0..n {
        let mut r = record(i, if i.is_multiple_of(2) { AuditStatus::Proposed } else { AuditStatus::Executed });
        r.seal(i as u64 + 1, &prev);
        prev.clone_from(&r.hash);
        text.push_str(&r.to_line());
        text.push('\n');
        records.push(r);
    }
    (records, text)
}
