//! The kyc demo's out-of-process level: the vendor's extractor, whose body calls `std::fs`
//! directly, is refused by the kernel for every access its declaration does not allow, and
//! each refusal is audited with the path, after a notice that the call ran isolated.
//!
//! This test binary is its own worker: `main` calls `isolate::init` first, so the runtime
//! starts this same executable for each isolated call. It runs without the libtest harness
//! (`harness = false`). The kernel must have Landlock (ABI 4 or later) and user namespaces.

use agents_runtime::audit::{AuditRecord, AuditStatus};
use examples::kyc::app::run_demo;

fn one(records: &[AuditRecord], status: AuditStatus) -> &AuditRecord {
    let found: Vec<&AuditRecord> = records.iter().filter(|r| r.status == status).collect();
    assert_eq!(found.len(), 1, "one `{}` record expected in {records:#?}", status.as_str());
    found[0]
}

fn main() {
    agents_runtime::isolate::init();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut out = Vec::new();
    let report = rt.block_on(run_demo(&mut out)).unwrap();
    std::fs::remove_file(&report.audit_path).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("root:x:0:0"), "the demo printed /etc/passwd");
    let a = &report.attempts;
    let kernel =
        |i: usize| a[i].out_of_process.as_deref().unwrap_or_else(|| panic!("attempt {} ran no isolated call", i + 1));

    // In the policy: the vendor's body reads the document in its confined worker.
    let ok = kernel(0);
    one(ok, AuditStatus::Executed);
    let notice = one(ok, AuditStatus::Notice).reason.as_deref().unwrap();
    assert!(notice.starts_with("isolated: "), "{notice}");
    assert!(notice.contains("confined by landlock"), "{notice}");

    // Outside it: each `std::fs` call refused by the kernel, audited with the path.
    for i in [1, 2, 3, 4] {
        let records = kernel(i);
        assert!(records.iter().all(|r| r.status != AuditStatus::Executed), "{}: {records:#?}", a[i].what);
        let notice = one(records, AuditStatus::Notice).reason.as_deref().unwrap();
        assert!(notice.starts_with("isolated: ") && notice.contains("confined by landlock"), "{notice}");
        let failed = one(records, AuditStatus::Failed).reason.as_deref().unwrap();
        assert!(failed.contains(&format!("(`{}`)", a[i].path)), "{failed}");
        if i != 1 {
            // The climb out, the symlink and the write: the kernel's refusal itself.
            assert!(failed.contains("Permission denied"), "{}: {failed}", a[i].what);
        }
    }
    assert!(kernel(4).iter().any(|r| r.reason.as_deref().is_some_and(|x| x.contains("std::fs::write"))));
    assert!(a[5].out_of_process.is_none());
    println!("kyc_isolated: ok ({} isolated calls checked)", 5);
}
