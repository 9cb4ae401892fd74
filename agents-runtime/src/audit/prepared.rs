//! Records serialized before they are sealed, so the single writer thread does little work.
//!
//! A record's hash and its line are canonical JSON objects: members sorted by key, joined by
//! commas. Only three members depend on the chain (`hash`, `prev_hash`, `seq`), so a producer
//! renders every other member in advance, on its own thread, and the writer splices the three
//! in and hashes. The result is byte for byte what [`AuditRecord::compute_hash`] and
//! [`AuditRecord::to_line`] produce (checked in debug builds and by the tests below).

use super::AuditRecord;
use agents_core::Tier;
use agents_core::canonical;
use serde_json::Value;

pub(crate) struct Prepared {
    record: AuditRecord,
    /// The other members, comma-joined, split where the chain members go: before `hash`,
    /// between `hash` and `prev_hash`, between `prev_hash` and `seq`, after `seq`.
    parts: [String; 4],
}

impl Prepared {
    pub(crate) fn new(record: AuditRecord) -> Self {
        // Exhaustive on purpose: a new field must be added below (in key order), or this does
        // not compile, rather than hash something other than `compute_hash` does.
        let AuditRecord {
            seq: _,
            ts,
            run_id,
            session_id,
            request_id,
            call_id,
            user_id,
            org_id,
            role,
            agent,
            tool,
            tier,
            status,
            reason,
            title,
            args,
            args_hash,
            result,
            manifest_sha256,
            prev_hash: _,
            hash: _,
        } = &record;
        let mut m = Members::default();
        m.string("agent", agent);
        m.json("args", args.as_ref());
        m.opt_string("args_hash", args_hash.as_deref());
        m.opt_string("call_id", call_id.as_deref());
        let before_hash = m.take();
        m.string("manifest_sha256", manifest_sha256);
        m.string("org_id", org_id);
        let before_prev = m.take();
        m.opt_string("reason", reason.as_deref());
        m.string("request_id", request_id);
        m.json("result", result.as_ref());
        m.string("role", role);
        m.string("run_id", run_id);
        let before_seq = m.take();
        m.string("session_id", session_id);
        m.string("status", status.as_str());
        m.opt_string("tier", tier.map(Tier::as_str));
        m.opt_string("title", title.as_deref());
        m.opt_string("tool", tool.as_deref());
        m.string("ts", ts);
        m.string("user_id", user_id);
        let after_seq = m.take();
        Prepared { record, parts: [before_hash, before_prev, before_seq, after_seq] }
    }

    /// Seals the record after `prev_hash` as number `seq`; returns it with its line.
    pub(crate) fn seal(self, seq: u64, prev_hash: &str) -> (AuditRecord, String) {
        let Prepared { mut record, parts: [before_hash, before_prev, before_seq, after_seq] } = self;
        let prev_member = format!("\"prev_hash\":{}", canonical::to_string(&Value::String(prev_hash.to_owned())));
        let seq_member = format!("\"seq\":{}", canonical::to_string(&Value::from(seq)));
        let hashed = object(&[&before_hash, &before_prev, &prev_member, &before_seq, &seq_member, &after_seq]);
        let hash = canonical::sha256_hex(hashed.as_bytes());
        let hash_member = format!("\"hash\":\"{hash}\"");
        let line =
            object(&[&before_hash, &hash_member, &before_prev, &prev_member, &before_seq, &seq_member, &after_seq]);
        record.seq = seq;
        prev_hash.clone_into(&mut record.prev_hash);
        record.hash = hash;
        debug_assert_eq!(record.hash, record.compute_hash());
        debug_assert_eq!(line, record.to_line());
        (record, line)
    }
}

/// `{` + the non-empty parts joined by commas + `}`.
fn object(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>() + 2);
    out.push('{');
    for part in parts.iter().filter(|p| !p.is_empty()) {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(part);
    }
    out.push('}');
    out
}

/// Canonical members (`"key":value`), comma-joined.
#[derive(Default)]
struct Members(String);

impl Members {
    fn key(&mut self, key: &str) {
        if !self.0.is_empty() {
            self.0.push(',');
        }
        self.0.push('"');
        self.0.push_str(key);
        self.0.push_str("\":");
    }

    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        self.0.push_str(&canonical::to_string(&Value::String(value.to_owned())));
    }

    fn opt_string(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(value) => self.string(key, value),
            None => self.json(key, None),
        }
    }

    fn json(&mut self, key: &str, value: Option<&Value>) {
        self.key(key);
        match value {
            Some(value) => self.0.push_str(&canonical::to_string(value)),
            None => self.0.push_str("null"),
        }
    }

    fn take(&mut self) -> String {
        std::mem::take(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agents_core::audit::{AuditStatus, GENESIS_HASH};
    use serde_json::json;

    fn record(args: Value, result: Option<Value>) -> AuditRecord {
        AuditRecord {
            seq: 0,
            ts: "2026-01-01T00:00:00Z".to_owned(),
            run_id: "r".to_owned(),
            session_id: "s".to_owned(),
            request_id: "q".to_owned(),
            call_id: None,
            user_id: "u".to_owned(),
            org_id: "o".to_owned(),
            role: "ärztin".to_owned(),
            agent: "a".to_owned(),
            tool: Some("t".to_owned()),
            tier: None,
            status: AuditStatus::Proposed,
            reason: Some("line\nbreak \"quoted\" \u{1}".to_owned()),
            title: None,
            args: Some(args),
            args_hash: None,
            result,
            manifest_sha256: "m".to_owned(),
            prev_hash: "stale".to_owned(),
            hash: "stale".to_owned(),
        }
    }

    #[test]
    fn spliced_hash_and_line_equal_the_record_methods() {
        let mut every_field = record(Value::Null, Some(json!({"ok": true})));
        every_field.args = None;
        every_field.call_id = Some("c-1".to_owned());
        every_field.tier = Some(Tier::Handoff);
        every_field.title = Some("Überweisen".to_owned());
        every_field.args_hash = Some("ab".repeat(32));
        every_field.status = AuditStatus::HandedOff;
        let cases = [
            every_field,
            record(json!({"hash": 1, "seq": "x", "prev_hash": null}), None),
            record(
                json!({"\u{ff61}": 1, "\u{1f600}": [1e21, 1.5e-7, -0.0, 9007199254740993_u64]}),
                Some(json!({"seq": 2})),
            ),
            record(json!({}), Some(json!([]))),
        ];
        let mut prev = GENESIS_HASH.to_owned();
        for (i, r) in cases.into_iter().enumerate() {
            let seq = [1, 2, 3, u64::MAX][i];
            let (sealed, line) = Prepared::new(r.clone()).seal(seq, &prev);
            let mut expected = r;
            expected.seal(seq, &prev);
            assert_eq!(sealed, expected);
            assert_eq!(line, expected.to_line());
            prev = sealed.hash;
        }
    }
}
