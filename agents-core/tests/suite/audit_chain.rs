//! Sealing and verifying a JSONL audit chain.

use agents_core::Tier;
use agents_core::audit::{AuditRecord, AuditStatus, ChainError, ChainSummary, GENESIS_HASH, verify_jsonl};
use serde_json::json;

const MANIFEST: &str = "9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b";

fn record(i: u64) -> AuditRecord {
    AuditRecord {
        seq: 0,
        ts: format!("2026-02-03T04:05:{:02}Z", i % 60),
        run_id: "run-1".into(),
        session_id: "s-1".into(),
        request_id: "q-1".into(),
        call_id: Some(format!("c-{i}").into()),
        epoch: None,
        user_id: "u-1".into(),
        org_id: "o-1".into(),
        role: "clerk".into(),
        agent: "helpdesk".into(),
        tool: Some("ticket.close".into()),
        tier: Some(Tier::Action),
        status: if i.is_multiple_of(2) { AuditStatus::Proposed } else { AuditStatus::Executed },
        reason: None,
        title: Some("Close ticket".into()),
        args: Some(json!({"ticket": i, "note": "ünïcode \"quoted\"", "ratio": 0.25}).into()),
        args_hash: None,
        result: None,
        import: None,
        manifest_sha256: MANIFEST.into(),
        prev_hash: String::new(),
        hash: String::new(),
        node: None,
    }
}

fn chain(n: u64) -> (Vec<AuditRecord>, Vec<String>) {
    let mut prev = GENESIS_HASH.to_owned();
    let mut records = Vec::new();
    for i in 0..n {
        let mut r = record(i);
        r.seal(i + 1, &prev);
        prev.clone_from(&r.hash);
        records.push(r);
    }
    let lines = records.iter().map(AuditRecord::to_line).collect();
    (records, lines)
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn seal_sets_seq_link_and_a_hash_of_everything_else() {
    let mut r = record(0);
    r.seal(1, GENESIS_HASH);
    assert_eq!((r.seq, r.prev_hash.as_str()), (1, GENESIS_HASH));
    assert_eq!(r.hash.len(), 64);
    assert_eq!(r.hash, r.compute_hash());
    // The hash does not depend on the previous value of `hash`, but on every other field.
    let mut same = r.clone();
    same.hash = "x".to_owned();
    assert_eq!(same.compute_hash(), r.hash);
    let mut other = r.clone();
    other.ts.push('0');
    assert_ne!(other.compute_hash(), r.hash);
    let mut relinked = r.clone();
    relinked.seal(2, &r.hash);
    assert_ne!(relinked.hash, r.hash);
}

#[test]
fn a_line_is_canonical_json_that_parses_back_to_the_record() {
    let (records, lines) = chain(1);
    let line = &lines[0];
    assert!(!line.contains('\n') && !line.contains(": "));
    assert!(line.starts_with("{\"agent\":\"helpdesk\",\"args\":{\"note\":"), "{line}");
    let back: AuditRecord = serde_json::from_str(line).unwrap();
    assert_eq!(back, records[0]);
    assert_eq!(back.to_line(), *line);
}

#[test]
fn a_valid_chain_verifies() {
    assert_eq!(verify_jsonl("", None), Ok(ChainSummary::empty()));
    let (records, lines) = chain(5);
    let summary = verify_jsonl(&text(&lines), Some(MANIFEST)).unwrap();
    assert_eq!((summary.records, summary.last_hash), (5, records[4].hash.clone()));
    assert_eq!(summary.seals, agents_core::audit::SealCheck::Integrity);
}

#[test]
fn each_break_is_reported_on_its_line() {
    let (records, lines) = chain(4);

    let mut edited = lines.clone();
    edited[1] = edited[1].replace("\"ticket\":1", "\"ticket\":7");
    assert_eq!(verify_jsonl(&text(&edited), None), Err(ChainError::HashMismatch { line: 2 }));

    let mut deleted = lines.clone();
    deleted.remove(1);
    assert_eq!(verify_jsonl(&text(&deleted), None), Err(ChainError::BrokenLink { line: 2 }));

    let mut swapped = lines.clone();
    swapped.swap(2, 3);
    assert_eq!(verify_jsonl(&text(&swapped), None), Err(ChainError::BrokenLink { line: 3 }));

    // Right link, wrong sequence number (re-sealed by someone who kept the link).
    let mut renumbered = records[2].clone();
    renumbered.seal(9, &records[1].hash);
    let mut resequenced = lines.clone();
    resequenced[2] = renumbered.to_line();
    assert_eq!(verify_jsonl(&text(&resequenced), None), Err(ChainError::Sequence { line: 3, found: 9, expected: 3 }));

    let mut garbage = lines.clone();
    garbage.insert(2, "{\"seq\":3}".to_owned());
    assert!(matches!(verify_jsonl(&text(&garbage), None), Err(ChainError::Malformed { line: 3, .. })));

    assert!(matches!(verify_jsonl(&text(&lines), Some("another")), Err(ChainError::ManifestMismatch { line: 1, .. })));
}

#[test]
fn an_unterminated_last_line_is_torn() {
    let (_, lines) = chain(3);
    let full = text(&lines);
    let cut = &full[..full.len() - 20];
    assert_eq!(verify_jsonl(cut, None), Err(ChainError::TornTail { line: 3 }));
    // Even when the line is complete, only the newline makes it a committed record.
    assert_eq!(verify_jsonl(full.trim_end(), None), Err(ChainError::TornTail { line: 3 }));
    let message = ChainError::TornTail { line: 3 }.to_string();
    assert!(message.contains("nothing after line 2"), "{message}");
}

#[test]
fn a_line_re_encoded_without_changing_its_meaning_is_refused() {
    let (_, lines) = chain(3);
    for (from, to) in [("0.25", "2.5e-1"), ("\"u-1\"", "\"u-\\u0031\""), ("\"ticket\":1", "\"ticket\":1.0")] {
        let mut reencoded = lines.clone();
        assert!(reencoded[1].contains(from), "{from}");
        reencoded[1] = reencoded[1].replacen(from, to, 1);
        // The record means the same thing and still matches its hash ...
        let record: AuditRecord = serde_json::from_str(&reencoded[1]).unwrap();
        assert_eq!(record.compute_hash(), record.hash);
        // ... but the bytes are not the ones that were written.
        match verify_jsonl(&text(&reencoded), None) {
            Err(ChainError::Malformed { line: 2, detail }) => assert!(detail.contains("canonical"), "{detail}"),
            other => panic!("{from} -> {to}: {other:?}"),
        }
    }
}

/// A record written before records could name an MCP import: no `import` member at all.
const WRITTEN_BEFORE_IMPORTS: &str = r#"{"agent":"notes","args":{"query":"x"},"args_hash":null,"call_id":"c1","hash":"524da09da3bc3c7e5d72a30df75f51fa414e24fdb811f431770862fb92b52e6b","manifest_sha256":"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd","org_id":"o","prev_hash":"0000000000000000000000000000000000000000000000000000000000000000","reason":null,"request_id":"q","result":{"sha256":"abababababababababababababababababababababababababababababababab"},"role":"clerk","run_id":"run-1","seq":1,"session_id":"s","status":"executed","tier":"read","title":null,"tool":"search","ts":"2026-05-27T10:00:00Z","user_id":"u"}"#;

#[test]
fn a_log_written_before_imports_still_verifies_and_an_import_is_sealed_with_its_record() {
    let summary = verify_jsonl(&format!("{WRITTEN_BEFORE_IMPORTS}\n"), None).unwrap();
    assert_eq!(summary.records, 1);
    let old: AuditRecord = serde_json::from_str(WRITTEN_BEFORE_IMPORTS).unwrap();
    assert_eq!(old.import, None);
    assert_eq!(old.to_line(), WRITTEN_BEFORE_IMPORTS, "a record without an import is written as before");

    // The same call of an imported tool: its record names the server, the tool and the pin,
    // and they are covered by the hash.
    let mut r = old.clone();
    r.import = Some(agents_core::audit::AuditImport {
        server: "notes-server".into(),
        source: Some("http: https://notes.example/mcp".into()),
        tool: "search_notes".into(),
        sha256: "12".repeat(32),
        listed_sha256: None,
    });
    r.seal(1, GENESIS_HASH);
    assert_ne!(r.hash, old.hash);
    let line = r.to_line();
    assert!(line.contains(r#""import":{"server":"notes-server","sha256":"1212"#), "{line}");
    assert_eq!(verify_jsonl(&format!("{line}\n"), None).unwrap().records, 1);
    let edited = line.replace("notes-server", "other-server");
    assert!(matches!(verify_jsonl(&format!("{edited}\n"), None), Err(ChainError::HashMismatch { line: 1 })));
    // An unknown member inside `import` is not a record.
    let extra = line.replace(r#""tool":"search_notes""#, r#""tool":"search_notes","x":1"#);
    assert!(matches!(verify_jsonl(&format!("{extra}\n"), None), Err(ChainError::Malformed { .. })));
}
