//! The examples' screen: a record is shown after every event the run published before it.

use agents_runtime::audit::{AuditRecord, AuditSink, MemorySink};
use agents_runtime::events::Event;
use examples::console::{Screen, ShowingSink};
use serde_json::json;

fn record() -> AuditRecord {
    serde_json::from_value(json!({
        "seq": 0, "ts": "2026-03-16T09:00:00Z", "run_id": "r", "session_id": "s", "request_id": "q",
        "call_id": "call_1", "user_id": "u", "org_id": "o", "role": "employee", "agent": "deskloop",
        "tool": "open_ticket", "tier": "action", "status": "proposed", "reason": null, "title": null,
        "args": {"severity": 3.0}, "args_hash": null, "result": null, "manifest_sha256": "00", "prev_hash": "", "hash": ""
    }))
    .unwrap()
}

#[tokio::test]
async fn events_published_before_a_record_are_shown_before_it() {
    let (sink, mut records) = ShowingSink::new(MemorySink::new());
    let (events_in, mut events) = tokio::sync::mpsc::channel(8);
    // The run published two events, then appended a record: all three wait at once.
    for text in ["first", "second"] {
        events_in.send(Event::Message { run_id: "r".into(), text: text.into() }).await.unwrap();
    }
    let append = tokio::spawn(async move { sink.append(record()).await.map(|r| r.seq) });
    while records.is_empty() {
        tokio::task::yield_now().await;
    }
    let mut out = Vec::new();
    // The screen's file tail is not used when a sink hands it the records.
    let mut screen = Screen::new(&mut out, std::path::Path::new("unused.jsonl"));
    let seq = screen
        .show_turn(&mut events, &mut records, async { append.await.unwrap() }, |s, e| match e {
            Event::Message { text, .. } => writeln!(s.out, "event {text}"),
            _ => Ok(()),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seq, 1, "the sink resolved once the record was shown");
    assert_eq!(screen.shown.len(), 1);
    drop(screen);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(&lines[..2], ["event first", "event second"], "{text}");
    // Shown as the log writes it: canonical numbers.
    assert_eq!(lines[2], "[audit # 1] proposed    open_ticket (call_1) tier=action args={\"severity\":3}");
}

#[test]
fn a_cards_warning_is_the_runtimes_sentence_escaped_for_the_terminal() {
    let why = "argument `to` was copied from the result of `read_inbox` (call c1) at `body`\u{1b}[2J";
    let line = examples::console::warning_line(why);
    assert!(
        line.contains(
            "check before deciding: argument `to` was copied from the result of `read_inbox` (call c1) at `body`"
        ),
        "{line}"
    );
    assert!(!line.contains('\u{1b}'), "a control character in the sentence cannot repaint the terminal: {line:?}");
}
