mod audit_common;
use agents_runtime::audit::*;
use std::io::Write;
use std::sync::{Arc, Mutex};
struct Store { file: std::fs::File, sizes: Arc<Mutex<Vec<usize>>> }
impl DurableStore for Store {
    fn commit(&mut self, records: &[AuditRecord]) -> std::io::Result<()> {
        let mut buf = Vec::new();
        for r in records { buf.extend_from_slice(r.to_line().as_bytes()); buf.push(b'\n'); }
        self.file.write_all(&buf)?; self.file.sync_data()?;
        self.sizes.lock().unwrap().push(records.len()); Ok(())
    }
}
#[test]
fn scratch() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let file = std::fs::OpenOptions::new().create(true).append(true).open(dir.path().join("x")).unwrap();
    let sink = Arc::new(GroupCommitSink::spawn("x", Store { file, sizes: sizes.clone() }, ChainSummary { records: 0, last_hash: GENESIS_HASH.into() }).unwrap());
    let t = std::time::Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..16).map(|p| { let sink = sink.clone(); tokio::spawn(async move { for i in 0..100 { sink.append(audit_common::record(p * 1000 + i, AuditStatus::Proposed)).await.unwrap(); } }) }).collect();
        for t in tasks { t.await.unwrap(); }
    });
    let s = sizes.lock().unwrap();
    let mut hist = std::collections::BTreeMap::new();
    for x in s.iter() { *hist.entry(*x).or_insert(0) += 1; }
    eprintln!("{} batches in {:?}: {:?}", s.len(), t.elapsed(), hist);
}
