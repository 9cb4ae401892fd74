//! What retrieval costs, against a hand-written baseline measured in the same run.
//!
//! The corpus is generated (deterministic): policy-like paragraphs over a vocabulary of 600
//! words, about 1 MiB in one embedded source, cut into chunks of at most 1 200 bytes.
//!
//! - `load`: `SourceSet::load` (UTF-8 check, SHA-256) and `chunk_set`.
//! - `build`: `KnowledgeBase::build` (chunking and the in-memory tantivy index), against the
//!   baseline of chunking alone.
//! - `query`: `KnowledgeBase::search` (BM25, 5 passages), against the baseline of a linear
//!   scan that counts the query's words in every chunk's lowercased text and keeps the best 5.
//! - `hybrid`: `KnowledgeBase::search_hybrid` with a 256-number `ScriptedEmbedder`, against
//!   the same baseline.
//!
//! Each figure is the median of its runs. Run: `cargo bench -p agents-knowledge --bench retrieval`
//! (add `--profile dev` for a quick, unoptimised run: then only the ratios mean anything).
#![allow(missing_docs)]

use agents_knowledge::{
    ChunkLimits, KnowledgeBase, RetrievalLimits, ScriptedEmbedder, Source, SourceLimits, SourceSet, chunk_set,
};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn corpus() -> &'static [u8] {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let words: Vec<String> = (0..600).map(|i| format!("w{i:03}{}", ["leave", "hire", "pay", "risk"][i % 4])).collect();
    let mut text = String::new();
    while text.len() < 1 << 20 {
        let sentences = 2 + next() % 4;
        for _ in 0..sentences {
            let n = 6 + next() % 10;
            let sentence: Vec<&str> = (0..n).map(|_| words[(next() % 600) as usize].as_str()).collect();
            text.push_str(&sentence.join(" "));
            text.push_str(".\n");
        }
        text.push('\n');
    }
    Box::leak(text.into_bytes().into_boxed_slice())
}

fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn scan(chunks: &[agents_knowledge::Chunk], query: &str) -> Vec<usize> {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let mut scored: Vec<(usize, usize)> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let text = c.text().to_lowercase();
            (i, words.iter().map(|w| text.matches(w.as_str()).count()).sum())
        })
        .filter(|(_, s)| *s > 0)
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().take(5).map(|(i, _)| i).collect()
}

fn main() {
    let bytes = corpus();
    let limits = ChunkLimits::default();
    let load = || SourceSet::load(vec![Source::embedded("corpus", bytes)], SourceLimits::default()).unwrap();
    let set = load();
    let chunks = chunk_set(&set, limits).unwrap();
    println!("corpus: {} bytes, {} chunks of at most {} bytes", bytes.len(), chunks.len(), limits.max_chunk_bytes);

    let t_load = median(11, || drop(black_box(chunk_set(&load(), limits).unwrap())));
    let t_chunk = median(11, || drop(black_box(chunk_set(&set, limits).unwrap())));
    let t_build = median(5, || drop(black_box(KnowledgeBase::build(&set, limits).unwrap())));
    println!("load (read, UTF-8, SHA-256) + chunk: {t_load:?}");
    println!("build: {t_build:?}  baseline (chunking alone) {t_chunk:?}  ratio {:.1}", ratio(t_build, t_chunk));

    let mut base = KnowledgeBase::build(&set, limits).unwrap();
    let query = "w001hire w123risk w450leave notice period";
    let t_scan = median(21, || drop(black_box(scan(base.chunks(), query))));
    let t_query = median(21, || drop(black_box(base.search(query, RetrievalLimits::default()).unwrap())));
    println!("query (BM25): {t_query:?}  baseline (linear scan) {t_scan:?}  ratio {:.2}", ratio(t_query, t_scan));

    let embedder = ScriptedEmbedder::new(256);
    let t_embed = median(3, || {
        let mut fresh = KnowledgeBase::build(&set, limits).unwrap();
        black_box(futures::executor::block_on(fresh.embed(&embedder)).unwrap());
    });
    futures::executor::block_on(base.embed(&embedder)).unwrap();
    let t_hybrid = median(21, || {
        let found = futures::executor::block_on(base.search_hybrid(query, &embedder, RetrievalLimits::default()));
        drop(black_box(found.unwrap()));
    });
    println!("build + embed every chunk (scripted, 256 numbers): {t_embed:?}");
    println!("query (hybrid): {t_hybrid:?}  baseline (linear scan) {t_scan:?}  ratio {:.2}", ratio(t_hybrid, t_scan));
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}
