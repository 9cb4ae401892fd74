//! The JSONL sink: chaining, reopening, concurrency, refusal of torn and edited logs, and the
//! group-commit core's failure handling.

use crate::audit_common;

use agents_runtime::audit::{
    AuditError, AuditRecord, AuditSink, AuditStatus, ChainError, ChainSummary, DurableStore, GENESIS_HASH,
    GroupCommitSink, JsonlOpenError, JsonlSink, MemorySink, verify_jsonl_bytes, verify_jsonl_file,
    verify_jsonl_file_with,
};
use audit_common::{MANIFEST, record, sealed_chain};
use futures::FutureExt;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Mutex, mpsc};

fn read_records(path: &std::path::Path) -> Vec<AuditRecord> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test]
async fn records_chain_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = JsonlSink::open(&path).unwrap();
    let mut sealed = Vec::new();
    for i in 0..5 {
        sealed.push(sink.append(record(i, AuditStatus::Proposed)).await.unwrap());
    }
    assert_eq!(sealed.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    assert_eq!(sealed[0].prev_hash, GENESIS_HASH);
    for pair in sealed.windows(2) {
        assert_eq!(pair[1].prev_hash, pair[0].hash);
    }
    for r in &sealed {
        assert_eq!(r.hash, r.compute_hash());
    }
    // Durable when the future resolved: the file already holds the records, before the sink
    // is closed.
    assert_eq!(read_records(&path), sealed);
    let text = std::fs::read_to_string(&path).unwrap();
    let expected: String = sealed.iter().map(|r| r.to_line() + "\n").collect();
    assert_eq!(text, expected);
    let summary = verify_jsonl_file(&path, Some(MANIFEST)).unwrap();
    assert_eq!(summary, ChainSummary::plain(5, sealed[4].hash.clone()));
    match verify_jsonl_file(&path, Some("another manifest")) {
        Err(JsonlOpenError::Broken { source: ChainError::ManifestMismatch { line: 1, .. }, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn reopening_continues_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let last = {
        let sink = JsonlSink::open(&path).unwrap();
        sink.append(record(0, AuditStatus::RunStarted)).await.unwrap();
        sink.append(record(1, AuditStatus::Proposed)).await.unwrap()
    };
    let sink = JsonlSink::open(&path).unwrap();
    let next = sink.append(record(2, AuditStatus::Executed)).await.unwrap();
    assert_eq!(next.seq, 3);
    assert_eq!(next.prev_hash, last.hash);
    drop(sink);
    let summary = verify_jsonl_file(&path, None).unwrap();
    assert_eq!(summary, ChainSummary::plain(3, next.hash));
}

#[tokio::test]
async fn a_second_writer_is_refused_while_the_log_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = JsonlSink::open(&path).unwrap();
    match JsonlSink::open(&path) {
        Err(e @ JsonlOpenError::Locked { .. }) => assert!(e.to_string().contains("only one writer"), "{e}"),
        other => panic!("{other:?}"),
    }
    drop(sink);
    JsonlSink::open(&path).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_producers_are_all_durable_and_contiguous() {
    const PRODUCERS: usize = 16;
    const PER_PRODUCER: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = Arc::new(JsonlSink::open(&path).unwrap());
    let mut tasks = Vec::new();
    for p in 0..PRODUCERS {
        let sink = Arc::clone(&sink);
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for i in 0..PER_PRODUCER {
                let mut r = record(p * PER_PRODUCER + i, AuditStatus::Proposed);
                r.run_id = format!("producer-{p}").into();
                mine.push(sink.append(r).await.unwrap());
            }
            mine
        }));
    }
    let mut acknowledged = BTreeMap::new();
    for task in tasks {
        let mine = task.await.unwrap();
        // One producer's records keep their order in the chain.
        assert!(mine.windows(2).all(|w| w[0].seq < w[1].seq));
        for r in mine {
            assert!(acknowledged.insert(r.seq, r).is_none(), "a sequence number was given twice");
        }
    }
    let total = PRODUCERS * PER_PRODUCER;
    assert_eq!(acknowledged.keys().copied().collect::<Vec<_>>(), (1..=total as u64).collect::<Vec<_>>());
    // Every acknowledged record is in the file, exactly as acknowledged, before the sink closes.
    let on_disk = read_records(&path);
    assert_eq!(on_disk, acknowledged.into_values().collect::<Vec<_>>());
    let summary = verify_jsonl_file(&path, Some(MANIFEST)).unwrap();
    assert_eq!(summary.records, total);
}

#[test]
fn a_torn_last_line_is_refused_at_open_with_its_line_and_can_be_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let (records, text) = sealed_chain(4);
    let half = records[3].to_line().len() / 2;
    let complete = text.len() - records[3].to_line().len() - 1;
    std::fs::write(&path, &text.as_bytes()[..complete + half]).unwrap();

    match JsonlSink::open(&path) {
        Err(e @ JsonlOpenError::TornTail { line: 4, .. }) => {
            assert_eq!(e.line(), Some(4));
            let message = e.to_string();
            assert!(message.contains("line 4 is torn") && message.contains("truncate_torn_tail"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Refusing changed nothing.
    assert_eq!(std::fs::read(&path).unwrap().len(), complete + half);

    let removed = JsonlSink::truncate_torn_tail(&path).unwrap().unwrap();
    assert_eq!((removed.line, removed.offset), (4, complete as u64));
    assert_eq!(removed.removed, text.as_bytes()[complete..complete + half]);
    assert_eq!(verify_jsonl_file(&path, None).unwrap().records, 3);
    assert_eq!(JsonlSink::truncate_torn_tail(&path).unwrap(), None);
    drop(JsonlSink::open(&path).unwrap());
}

#[test]
fn a_complete_record_without_its_newline_is_still_torn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let (_, text) = sealed_chain(2);
    std::fs::write(&path, text.trim_end_matches('\n')).unwrap();
    assert!(matches!(JsonlSink::open(&path), Err(JsonlOpenError::TornTail { line: 2, .. })));
}

#[test]
fn a_write_cut_inside_a_multibyte_character_is_torn_not_malformed() {
    let (records, text) = sealed_chain(2);
    let line = records[1].to_line();
    let umlaut = line.find('ü').expect("record 1 has a title with an umlaut");
    let cut = text.len() - line.len() - 1 + umlaut + 1; // inside the two bytes of `ü`
    assert!(std::str::from_utf8(&text.as_bytes()[..cut]).is_err());
    assert_eq!(verify_jsonl_bytes(&text.as_bytes()[..cut], None), Err(ChainError::TornTail { line: 2 }));
}

#[test]
fn an_edited_line_is_refused_and_the_file_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let (_, text) = sealed_chain(5);
    let edited = text.replacen("\"patient\":\"p-2\"", "\"patient\":\"p-9\"", 1);
    assert_ne!(edited, text);
    std::fs::write(&path, &edited).unwrap();
    match JsonlSink::open(&path) {
        Err(e @ JsonlOpenError::Broken { source: ChainError::HashMismatch { line: 3 }, .. }) => {
            assert!(e.to_string().contains("keep it unchanged as evidence"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // A broken chain is not a torn tail: the repair refuses it.
    assert!(matches!(JsonlSink::truncate_torn_tail(&path), Err(JsonlOpenError::Broken { .. })));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
}

/// One pass gives the verdict of `verify_jsonl_file` and every record: after a break too
/// (the records that still parse; a line that does not is skipped), up to a torn last line.
#[test]
fn verifying_with_a_visitor_reads_the_log_once_and_sees_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let (records, text) = sealed_chain(6);
    let seqs = |visited: &[AuditRecord]| visited.iter().map(|r| r.seq).collect::<Vec<_>>();

    std::fs::write(&path, &text).unwrap();
    let mut visited = Vec::new();
    let summary = verify_jsonl_file_with(&path, None, &mut |r| visited.push(r.clone())).unwrap();
    assert_eq!(summary, verify_jsonl_file(&path, None).unwrap());
    assert_eq!(visited, records, "every record, as written");

    // Edited on line 3, garbage on line 5: the verdict is the first break, the visitor still
    // sees the records after it.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[2] = lines[2].replacen("\"patient\":\"p-2\"", "\"patient\":\"p-9\"", 1);
    lines[4] = "not a record".to_owned();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let mut visited = Vec::new();
    let verdict = verify_jsonl_file_with(&path, None, &mut |r| visited.push(r.clone()));
    assert!(matches!(verdict, Err(JsonlOpenError::Broken { source: ChainError::HashMismatch { line: 3 }, .. })));
    assert!(matches!(
        verify_jsonl_file(&path, None),
        Err(JsonlOpenError::Broken { source: ChainError::HashMismatch { line: 3 }, .. })
    ));
    assert_eq!(seqs(&visited), [1, 2, 3, 4, 6], "the edited record is seen, the garbage line skipped");

    // A torn last line: the records before it, then the torn-tail answer.
    std::fs::write(&path, format!("{text}{{\"seq\":7")).unwrap();
    let mut visited = Vec::new();
    let verdict = verify_jsonl_file_with(&path, None, &mut |r| visited.push(r.clone()));
    assert!(matches!(verdict, Err(JsonlOpenError::TornTail { line: 7, .. })), "{verdict:?}");
    assert_eq!(seqs(&visited), [1, 2, 3, 4, 5, 6]);
}

/// A resumption asks the log whether a call's final record is in it.
#[tokio::test]
async fn the_jsonl_and_memory_sinks_find_a_calls_final_record() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = JsonlSink::open(dir.path().join("audit.jsonl")).unwrap();
    let memory = MemorySink::new();
    for sink in [&jsonl as &dyn AuditSink, &memory] {
        sink.append(record(1, AuditStatus::Proposed)).await.unwrap();
        sink.append(record(1, AuditStatus::Skipped)).await.unwrap();
        sink.append(record(2, AuditStatus::Proposed)).await.unwrap();
        assert_eq!(sink.holds_final("call-1").await.unwrap(), Some(true));
        assert_eq!(sink.holds_final("call-2").await.unwrap(), Some(false), "only proposed");
        assert_eq!(sink.holds_final("call-").await.unwrap(), Some(false), "the whole id");
    }
}

#[test]
fn a_line_that_is_not_utf8_is_reported_on_its_line() {
    let (_, text) = sealed_chain(3);
    let mut bytes = text.into_bytes();
    let second_line = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
    bytes[second_line + 5] = 0xff;
    match verify_jsonl_bytes(&bytes, None) {
        Err(ChainError::Malformed { line: 2, detail }) => assert!(detail.contains("UTF-8"), "{detail}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_empty_or_missing_log_opens_as_an_empty_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.jsonl");
    drop(JsonlSink::open(&path).unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), b"");
    assert_eq!(verify_jsonl_file(&path, None).unwrap(), ChainSummary::plain(0, GENESIS_HASH.to_owned()));
    match JsonlSink::open(dir.path().join("missing-dir/audit.jsonl")) {
        Err(e @ JsonlOpenError::Io { .. }) => assert!(e.to_string().contains("missing-dir"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_memory_sink_chains_like_the_durable_ones() {
    let sink = MemorySink::new();
    let a = sink.append(record(0, AuditStatus::Proposed)).await.unwrap();
    let b = sink.append(record(1, AuditStatus::Executed)).await.unwrap();
    assert_eq!((a.seq, b.seq), (1, 2));
    assert_eq!(b.prev_hash, a.hash);
    assert_eq!(sink.records(), vec![a, b.clone()]);
    let summary = agents_core::audit::verify_jsonl(&sink.to_jsonl(), Some(MANIFEST)).unwrap();
    assert_eq!(summary, ChainSummary::plain(2, b.hash));
}

/// A store that records what it was asked to commit, can hold a commit until released, and
/// can be told to fail the next commit.
#[derive(Clone, Default)]
struct ScriptedStore {
    batches: Arc<Mutex<Vec<Vec<u64>>>>,
    fail_next: Arc<Mutex<bool>>,
    hold_first: Arc<Mutex<Option<mpsc::Receiver<()>>>>,
}

impl DurableStore for ScriptedStore {
    fn commit(&mut self, records: &[AuditRecord], _lines: &[String]) -> io::Result<()> {
        if let Some(release) = self.hold_first.lock().unwrap().take() {
            release.recv().unwrap();
        }
        self.batches.lock().unwrap().push(records.iter().map(|r| r.seq).collect());
        if std::mem::take(&mut *self.fail_next.lock().unwrap()) {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left on device"));
        }
        Ok(())
    }
}

#[tokio::test]
async fn concurrent_appends_share_one_commit() {
    let store = ScriptedStore::default();
    let (release, hold) = mpsc::channel();
    *store.hold_first.lock().unwrap() = Some(hold);
    let sink =
        GroupCommitSink::spawn("test store", store.clone(), ChainSummary::plain(0, GENESIS_HASH.to_owned())).unwrap();
    let mut pending: Vec<_> = (0..16).map(|i| sink.append(record(i, AuditStatus::Proposed))).collect();
    // Polling once sends each record; the first commit is held, so the rest queue behind it.
    for future in &mut pending {
        assert!(future.now_or_never_ref().is_none());
    }
    release.send(()).unwrap();
    let sealed = futures::future::join_all(pending).await;
    let seqs: Vec<u64> = sealed.into_iter().map(|r| r.unwrap().seq).collect();
    assert_eq!(seqs, (1..=16).collect::<Vec<_>>());
    let batches = store.batches.lock().unwrap().clone();
    assert!(batches.len() <= 2, "16 queued records took {} commits: {batches:?}", batches.len());
    assert_eq!(batches.concat(), (1..=16).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_failed_commit_fails_its_batch_and_poisons_the_sink() {
    let store = ScriptedStore::default();
    let head = ChainSummary::plain(7, "ab".repeat(32));
    let sink = GroupCommitSink::spawn("test store", store.clone(), head).unwrap();
    let first = sink.append(record(0, AuditStatus::Proposed)).await.unwrap();
    assert_eq!((first.seq, first.prev_hash.as_str()), (8, "ab".repeat(32).as_str()));

    *store.fail_next.lock().unwrap() = true;
    match sink.append(record(1, AuditStatus::Proposed)).await {
        Err(AuditError::Io(e)) => {
            assert_eq!(e.kind(), io::ErrorKind::StorageFull);
            assert!(e.to_string().contains("were not made durable"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(sink.is_poisoned());
    // Later records are refused without reaching the store: none may claim to follow a record
    // that is not known to be durable.
    match sink.append(record(2, AuditStatus::Proposed)).await {
        Err(AuditError::Refused(reason)) => {
            assert!(reason.contains("last record known to be durable is seq 8"), "{reason}");
            assert!(reason.contains("Restart"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(*store.batches.lock().unwrap(), vec![vec![8], vec![9]]);
}

#[tokio::test]
async fn a_panicking_store_fails_closed() {
    struct Panics;
    impl DurableStore for Panics {
        fn commit(&mut self, _: &[AuditRecord], _: &[String]) -> io::Result<()> {
            panic!("store bug");
        }
    }
    let sink =
        GroupCommitSink::spawn("panicking store", Panics, ChainSummary::plain(0, GENESIS_HASH.to_owned())).unwrap();
    assert!(matches!(sink.append(record(0, AuditStatus::Proposed)).await, Err(AuditError::Refused(_))));
    assert!(matches!(sink.append(record(1, AuditStatus::Proposed)).await, Err(AuditError::Refused(_))));
}

/// `FutureExt::now_or_never` consumes the future; this polls it once in place.
trait PollOnce {
    fn now_or_never_ref(&mut self) -> Option<Result<AuditRecord, AuditError>>;
}

impl PollOnce for agents_runtime::audit::Appended<'_> {
    fn now_or_never_ref(&mut self) -> Option<Result<AuditRecord, AuditError>> {
        self.now_or_never()
    }
}

#[test]
fn a_producer_that_stops_waiting_leaves_no_gap() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    rt.block_on(async {
        let sink = JsonlSink::open(&path).unwrap();
        let mut abandoned = sink.append(record(0, AuditStatus::Proposed));
        // The first poll sends the record; then the caller stops waiting.
        let _ = abandoned.now_or_never_ref();
        drop(abandoned);
        let next = sink.append(record(1, AuditStatus::Proposed)).await.unwrap();
        assert_eq!(next.seq, 2);
    });
    let seqs: BTreeSet<u64> = read_records(&path).into_iter().map(|r| r.seq).collect();
    assert_eq!(seqs, BTreeSet::from([1, 2]));
}
