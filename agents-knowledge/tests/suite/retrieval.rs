//! Retrieval: BM25 over the chunks, hybrid ranking with an embedder, the bounds per query,
//! evidence without text, and the check every embedder's answer passes (a hand-written
//! embedder that lies is refused whole).

use agents_core::BoxFuture;
use agents_knowledge::{
    ChunkLimits, EmbedError, Embedder, EmbeddingUsage, Embeddings, KnowledgeBase, KnowledgeError, RetrievalLimits,
    ScriptedEmbedder, Source, SourceLimits, SourceSet,
};
use futures::executor::block_on;

const LEAVE: &[u8] = b"# Leave\n\nAnnual leave is 25 days a year.\n\nLeave must be booked two weeks ahead.\n";
const PROBATION: &[u8] = b"# Probation\n\nProbation lasts six months for every new hire.\n\nIt may be extended once.\n";
const EXPENSES: &[u8] = b"# Expenses\n\nReceipts are required for every expense above 20 euros.\n";

fn base(limits: ChunkLimits) -> KnowledgeBase {
    let set = SourceSet::load(
        vec![
            Source::embedded("leave", LEAVE),
            Source::embedded("probation", PROBATION),
            Source::embedded("expenses", EXPENSES),
        ],
        SourceLimits::default(),
    )
    .unwrap();
    KnowledgeBase::build(&set, limits).unwrap()
}

#[test]
fn bm25_finds_the_document_that_answers_with_stemming() {
    let base = base(ChunkLimits { max_chunk_bytes: 64 });
    let found = base.search("Is probation extended for new hires?", RetrievalLimits::default()).unwrap();
    let first = &found.passages[0].chunk;
    assert_eq!(first.source, "probation");
    assert!(found.passages.iter().all(|p| p.score > 0.0));
    let leave = base.search("booking leave", RetrievalLimits::default()).unwrap();
    assert_eq!(leave.passages[0].chunk.text(), "Leave must be booked two weeks ahead.\n", "booking ~ booked");
    assert_eq!(leave.usage, EmbeddingUsage::default(), "lexical search costs no embedding");
}

#[test]
fn a_query_is_never_query_syntax() {
    let base = base(ChunkLimits::default());
    for query in ["*", "body:*", "ord:[0 TO 100]", "\"unclosed", "", "   ", "AND OR NOT"] {
        let found = base.search(query, RetrievalLimits::default()).unwrap();
        assert!(found.passages.is_empty(), "{query:?} listed {:?}", found.passages);
    }
}

#[test]
fn each_query_is_bounded_in_chunks_and_bytes() {
    let base = base(ChunkLimits { max_chunk_bytes: 48 });
    let query = "leave probation expense receipts hire booked";
    let all = base.search(query, RetrievalLimits { max_chunks: 100, max_bytes: 1 << 20, candidates: 100 }).unwrap();
    assert!(all.passages.len() >= 4 && !all.truncated);
    let two = base.search(query, RetrievalLimits { max_chunks: 2, ..RetrievalLimits::default() }).unwrap();
    assert_eq!(two.passages.len(), 2);
    assert!(two.truncated);
    let bytes = base.search(query, RetrievalLimits { max_bytes: 60, ..RetrievalLimits::default() }).unwrap();
    assert!(bytes.passages.iter().map(|p| p.chunk.text().len()).sum::<usize>() <= 60);
    assert!(bytes.truncated && !bytes.passages.is_empty());
    assert_eq!(RetrievalLimits::default(), RetrievalLimits { max_chunks: 5, max_bytes: 8192, candidates: 50 });
}

#[test]
fn evidence_names_chunks_and_hashes_but_never_the_text() {
    let base = base(ChunkLimits::default());
    let found = base.search("receipts", RetrievalLimits::default()).unwrap();
    let evidence = found.evidence();
    let text = evidence.to_string();
    assert!(text.contains(&found.passages[0].chunk.id) && text.contains(&found.passages[0].chunk.sha256));
    assert!(!text.contains("Receipts are required"), "{text}");
    assert!(!text.to_lowercase().contains("receipts"), "{text}");
}

#[test]
fn hybrid_ranking_fuses_both_and_counts_the_query_embedding() {
    let mut base = base(ChunkLimits { max_chunk_bytes: 64 });
    let embedder = ScriptedEmbedder::new(256);
    let usage = block_on(base.embed(&embedder)).unwrap();
    assert_eq!(usage.inputs, base.chunks().len() as u64);
    assert_eq!(usage.calls, 1, "one batch of at most {} chunks", KnowledgeBase::EMBED_BATCH);
    let found = block_on(base.search_hybrid("six months probation", &embedder, RetrievalLimits::default())).unwrap();
    assert_eq!(found.passages[0].chunk.source, "probation");
    assert_eq!(found.usage.calls, 1);
    assert_eq!(found.usage.inputs, 1);
    // A word no document holds reaches the leave chunks through the vectors alone.
    let synonyms = Synonyms(embedder);
    assert!(base.search("vacation allowance", RetrievalLimits::default()).unwrap().passages.is_empty());
    let found = block_on(base.search_hybrid("vacation allowance", &synonyms, RetrievalLimits::default())).unwrap();
    assert_eq!(found.passages[0].chunk.source, "leave", "{:?}", found.passages[0].chunk);
}

/// The scripted embedder, reading `vacation` as `leave` (as a real embedding model would
/// place them close).
struct Synonyms(ScriptedEmbedder);

impl Embedder for Synonyms {
    fn name(&self) -> &str {
        "synonyms"
    }
    fn model(&self) -> &str {
        "synonyms"
    }
    fn embed<'a>(&'a self, inputs: &'a [String]) -> BoxFuture<'a, Result<Embeddings, EmbedError>> {
        let vectors = inputs.iter().map(|t| self.0.vector(&t.replace("vacation", "leave"))).collect();
        Box::pin(async move { Ok(Embeddings { vectors, usage: EmbeddingUsage { calls: 1, ..Default::default() } }) })
    }
}

/// The vectors a [`Lying`] embedder answers for a number of inputs.
type Answer = fn(usize) -> Vec<Vec<f32>>;

/// An embedder that answers whatever it is told to, for the checks.
struct Lying(Answer);

impl Embedder for Lying {
    fn name(&self) -> &str {
        "lying"
    }
    fn model(&self) -> &str {
        "lying"
    }
    fn embed<'a>(&'a self, inputs: &'a [String]) -> BoxFuture<'a, Result<Embeddings, EmbedError>> {
        let vectors = (self.0)(inputs.len());
        Box::pin(async move { Ok(Embeddings { vectors, usage: EmbeddingUsage { calls: 1, ..Default::default() } }) })
    }
}

#[test]
fn a_hand_written_embedder_that_lies_is_refused_whole() {
    let cases: [(Answer, &str); 4] = [
        (|n| vec![vec![1.0; 8]; n.saturating_sub(1)], "count"),
        (|n| (0..n).map(|i| vec![1.0; 8 + i]).collect(), "dimension"),
        (|n| vec![vec![f32::NAN; 8]; n], "nan"),
        (|n| vec![Vec::new(); n], "empty"),
    ];
    for (answer, what) in cases {
        let mut base = base(ChunkLimits { max_chunk_bytes: 64 });
        let err = block_on(base.embed(&Lying(answer))).unwrap_err();
        match what {
            "count" => assert!(matches!(err.error, EmbedError::Count { .. }), "{err:?}"),
            "dimension" => assert!(matches!(err.error, EmbedError::Dimension { .. }), "{err:?}"),
            _ => assert!(matches!(err.error, EmbedError::NotFinite { .. }), "{what}: {err:?}"),
        }
        assert_eq!(err.spent.calls, 1, "{what}: the refused call is still counted");
        assert!(!base.is_embedded(), "{what}: nothing kept");
    }
}

#[test]
fn a_query_vector_of_another_length_is_refused() {
    let mut base = base(ChunkLimits::default());
    block_on(base.embed(&ScriptedEmbedder::new(16))).unwrap();
    let err = block_on(base.search_hybrid("leave", &ScriptedEmbedder::new(8), RetrievalLimits::default())).unwrap_err();
    let KnowledgeError::Embed(failure) = err else { panic!("{err:?}") };
    assert_eq!(failure.error, EmbedError::Dimension { expected: 16, got: 8 });
    assert_eq!((failure.spent.calls, failure.spent.inputs), (1, 1), "the query's call is counted");
}

/// Answers its first call, fails every later one.
struct FailsAfterOne(std::sync::atomic::AtomicUsize);

impl Embedder for FailsAfterOne {
    fn name(&self) -> &str {
        "fails-after-one"
    }
    fn model(&self) -> &str {
        "fails-after-one"
    }
    fn embed<'a>(&'a self, inputs: &'a [String]) -> BoxFuture<'a, Result<Embeddings, EmbedError>> {
        let first = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
        Box::pin(async move {
            if !first {
                return Err(EmbedError::Protocol("the server went away".into()));
            }
            let usage = EmbeddingUsage { calls: 1, inputs: inputs.len() as u64, tokens: 7, estimated: false };
            Ok(Embeddings { vectors: vec![vec![1.0; 4]; inputs.len()], usage })
        })
    }
}

#[test]
fn a_failure_midway_keeps_nothing_but_says_what_was_spent() {
    let mut base = base(ChunkLimits { max_chunk_bytes: 8 });
    assert!(base.chunks().len() > KnowledgeBase::EMBED_BATCH, "two batches at least");
    let err = block_on(base.embed(&FailsAfterOne(Default::default()))).unwrap_err();
    assert_eq!(err.error, EmbedError::Protocol("the server went away".into()));
    assert_eq!(err.spent.calls, 2);
    // The answered call as the server reported it, the failed one estimated.
    let second: Vec<String> = base.chunks()[KnowledgeBase::EMBED_BATCH..]
        .iter()
        .take(KnowledgeBase::EMBED_BATCH)
        .map(|c| c.text().to_owned())
        .collect();
    assert_eq!(err.spent.tokens, 7 + EmbeddingUsage::estimate_tokens(&second));
    assert!(err.spent.estimated);
    assert!(!base.is_embedded());
}

#[test]
fn chunks_carry_their_place_and_the_document_hash() {
    let base = base(ChunkLimits { max_chunk_bytes: 64 });
    let probation: Vec<_> = base.chunks().iter().filter(|c| c.source == "probation").collect();
    let whole: String = probation.iter().map(|c| c.text()).collect();
    assert_eq!(whole.as_bytes(), PROBATION);
    for c in &probation {
        assert_eq!(&PROBATION[c.bytes.clone()], c.text().as_bytes());
        assert_eq!(c.sha256, agents_core::canonical::sha256_hex(c.text().as_bytes()));
        assert_eq!(c.document_sha256, agents_core::canonical::sha256_hex(PROBATION));
    }
    assert_eq!(probation[0].lines.start, 1);
}

#[test]
fn an_empty_set_finds_nothing_and_embeds_with_no_call() {
    let set = SourceSet::load(vec![Source::embedded("empty", b"")], SourceLimits::default()).unwrap();
    let mut base = KnowledgeBase::build(&set, ChunkLimits::default()).unwrap();
    assert!(base.chunks().is_empty());
    assert!(base.search("anything", RetrievalLimits::default()).unwrap().passages.is_empty());
    assert_eq!(block_on(base.embed(&ScriptedEmbedder::new(8))).unwrap().calls, 0);
}
