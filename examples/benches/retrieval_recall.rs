//! Retrieval quality on the helpdesk's policies: recall@5 of BM25 (the offline default), of
//! hybrid ranking (BM25 and a scripted embedder, fused by reciprocal rank) and of a plain
//! substring-search baseline, on the labelled questions of
//! `examples/eval/retrieval/helpdesk.json` (see `examples::helpdesk::recall`). Offline.
//!
//! Run: `cargo bench -p examples --bench retrieval_recall` (the figures do not depend on the
//! profile: `--profile dev` builds faster).
#![allow(missing_docs)]

use examples::helpdesk::recall::{K, measure};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // recall@5 is the figure asked for; recall@1 (is the best passage the right one?) beside it.
    for k in [K, 1] {
        let r = match measure(k).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("retrieval_recall: {e}");
                std::process::exit(1);
            }
        };
        if k == K {
            println!("helpdesk policies: {} labelled questions over {} passages", r.questions, r.passages);
        }
        println!("recall@{k}  substring baseline                       {:.3}", r.substring);
        println!(
            "recall@{k}  lexical (BM25)                            {:.3}  ({:+.3} against the baseline)",
            r.lexical,
            r.lexical - r.substring
        );
        println!(
            "recall@{k}  hybrid (BM25 + scripted embedder, RRF)    {:.3}  ({:+.3} against the baseline)",
            r.hybrid,
            r.hybrid - r.substring
        );
    }
}
