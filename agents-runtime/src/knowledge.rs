//! The documents an agent answers from, as a runtime loads and searches them.
//!
//! An agent declares its sources in `agent!` (`knowledge: [embedded("policies/leave.md"),
//! dir("policies")]`); its manifest carries each source's name, path, SHA-256 and size
//! ([`agents_core::knowledge`]). On an agent's first start a runtime reads every source once
//! (an embedded one from the binary, a `file` or `dir` one beneath
//! [`KnowledgeSettings::root`]), checks it against the manifest and builds its index
//! ([`agents_knowledge`]): a source that cannot be read, or whose SHA-256 or size differs from
//! the manifest's, refuses the start ([`StartError::Knowledge`](crate::run::StartError::Knowledge))
//! and nothing runs. What was read is kept, and every later start checks it cheaply: each
//! file's size and modification time and each directory's files, then, when any differs,
//! reads and hashes the sources again; a document changed on disk since refuses that start
//! as it would the first, and nothing is recorded. A run already started keeps the passages
//! of what was verified at its start.
//!
//! A [direct session](crate::Runtime::direct) has no turn and retrieves nothing.
//!
//! Each turn then retrieves the passages that best match the user's message (BM25; hybrid by
//! reciprocal rank fusion when an [`Embedder`] is set, see [`KnowledgeSettings::embedder`])
//! and gives them to the model as one user-role message of data
//! ([`passages_message`]), never in the system prompt.
//! Why each turn and not a tool the model calls: retrieval then needs no grant, adds no tool
//! to the manifest, cannot be skipped or steered by the model, and what reached the model is
//! fixed by the user's message alone. The passages count as untrusted content for the egress
//! check ([`crate::provenance`]): a value the model copies from one into a call that reaches
//! out waits for a person. The run's events and audit log show which passages were used
//! (chunk ids and SHA-256s, never their text); embedding tokens count against the run's
//! budget caps in tokens, and, when the embedder has a price
//! ([`Embedder::cost_usd`]; `OpenAiEmbeddingConfig::with_prices`),
//! their cost in USD counts against the caps in USD and the budget store as a model call's
//! does: recorded once the call is made, so the next paid call is refused when they spent
//! the budget.
//!
//! ```
//! use agents_runtime::knowledge::{KnowledgeSettings, RetrievalLimits};
//!
//! let settings = KnowledgeSettings {
//!     root: env!("CARGO_MANIFEST_DIR").into(),
//!     retrieval: RetrievalLimits { max_chunks: 3, ..RetrievalLimits::default() },
//!     ..KnowledgeSettings::default()
//! };
//! assert!(settings.embedder.is_none(), "lexical (offline) by default");
//! ```

use agents_core::knowledge::{EMBEDDED, KnowledgeEntry, KnowledgeOrigin, KnowledgeSpec};
pub use agents_knowledge::{
    ChunkLimits, EmbedError, Embedder, EmbeddingUsage, Embeddings, KnowledgeBase, PASSAGES_CLOSE, PASSAGES_OPEN,
    PASSAGES_PREAMBLE, Passage, Retrieval, RetrievalLimits, ScriptedEmbedder, Source, SourceLimits, SourceSet,
    passages_message,
};
#[cfg(feature = "http")]
pub use agents_knowledge::{OpenAiEmbedder, OpenAiEmbeddingConfig};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a runtime reads and searches its agents' knowledge (see
/// [`RuntimeBuilder::knowledge`](crate::run::RuntimeBuilder::knowledge)).
#[derive(Clone)]
pub struct KnowledgeSettings {
    /// The directory relative `file` and `dir` paths of the manifest are read beneath
    /// (default: the process's current directory).
    pub root: PathBuf,
    /// An embedder for hybrid ranking; `None` (the default) ranks by BM25 alone, offline.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// How much one turn retrieves.
    pub retrieval: RetrievalLimits,
    /// Bounds on what loading the sources reads.
    pub sources: SourceLimits,
    /// How large a chunk may be.
    pub chunks: ChunkLimits,
}

impl Default for KnowledgeSettings {
    fn default() -> Self {
        Self {
            root: PathBuf::from("."),
            embedder: None,
            retrieval: RetrievalLimits::default(),
            sources: SourceLimits::default(),
            chunks: ChunkLimits::default(),
        }
    }
}

impl std::fmt::Debug for KnowledgeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnowledgeSettings")
            .field("root", &self.root)
            .field("embedder", &self.embedder.as_ref().map(|e| e.name().to_owned()))
            .field("retrieval", &self.retrieval)
            .finish_non_exhaustive()
    }
}

/// A runtime's knowledge: its settings and the sources loaded so far, by manifest.
#[derive(Debug, Default)]
pub(crate) struct Knowledge {
    pub(crate) settings: KnowledgeSettings,
    loaded: Mutex<HashMap<&'static str, Arc<Loaded>>>,
}

/// One agent's sources, read, verified and indexed.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The manifest's entries, sorted by name as the manifest lists them.
    pub(crate) entries: Vec<KnowledgeEntry>,
    set: SourceSet,
    lexical: KnowledgeBase,
    /// The chunks with their vectors, made on the first hybrid query.
    hybrid: tokio::sync::OnceCell<Arc<KnowledgeBase>>,
}

impl Knowledge {
    /// A runtime's knowledge with these settings.
    pub(crate) fn new(settings: KnowledgeSettings) -> Self {
        Self { settings, loaded: Mutex::default() }
    }

    /// The agent's sources (of the manifest `manifest_sha256`), loaded and verified on the
    /// first call; `None` when it declares none. The error says which source and why.
    pub(crate) fn load(
        &self,
        manifest_sha256: &'static str,
        specs: &'static [KnowledgeSpec],
    ) -> Result<Option<Arc<Loaded>>, String> {
        if specs.is_empty() {
            return Ok(None);
        }
        if let Some(loaded) = lock(&self.loaded).get(manifest_sha256) {
            return Ok(Some(loaded.clone()));
        }
        self.read(manifest_sha256, specs).map(Some)
    }

    /// As [`load`](Self::load), at a run's start: sources loaded before are kept only while
    /// every `file` and `dir` source still has the sizes, modification times and files it had
    /// when read; otherwise they are read, verified and indexed again, and a difference from
    /// the manifest refuses the start (and forgets them, so the next start reads again).
    pub(crate) fn load_fresh(
        &self,
        manifest_sha256: &'static str,
        specs: &'static [KnowledgeSpec],
    ) -> Result<Option<Arc<Loaded>>, String> {
        if specs.is_empty() {
            return Ok(None);
        }
        let cached = lock(&self.loaded).get(manifest_sha256).cloned();
        if let Some(loaded) = cached.filter(|l| l.set.unchanged_on_disk()) {
            return Ok(Some(loaded));
        }
        lock(&self.loaded).remove(manifest_sha256);
        self.read(manifest_sha256, specs).map(Some)
    }

    /// Reads, verifies and indexes the agent's sources, and keeps them.
    fn read(&self, manifest_sha256: &'static str, specs: &'static [KnowledgeSpec]) -> Result<Arc<Loaded>, String> {
        let root = &self.settings.root;
        let mut sources = Vec::new();
        let mut expected = Vec::new();
        for spec in specs {
            let (source, path) = match spec.origin {
                KnowledgeOrigin::Embedded(bytes) => (Source::embedded(spec.name, bytes), EMBEDDED.to_owned()),
                KnowledgeOrigin::File(p) => (Source::file(spec.name, root.join(p)), label(root, p)),
                KnowledgeOrigin::Directory(p) => (Source::directory(spec.name, root.join(p)), label(root, p)),
            };
            sources.push(source);
            expected.push(KnowledgeEntry { path, ..KnowledgeEntry::from_spec(spec) });
        }
        let set = SourceSet::load_verified(sources, self.settings.sources, &expected).map_err(|e| e.to_string())?;
        let lexical = KnowledgeBase::build(&set, self.settings.chunks).map_err(|e| e.to_string())?;
        let mut entries: Vec<KnowledgeEntry> = specs.iter().map(KnowledgeEntry::from_spec).collect();
        entries.sort();
        let loaded = Arc::new(Loaded { entries, set, lexical, hybrid: tokio::sync::OnceCell::new() });
        lock(&self.loaded).insert(manifest_sha256, loaded.clone());
        Ok(loaded)
    }
}

/// The path a `file` or `dir` source is read from, as the loaded entry names it.
fn label(root: &std::path::Path, path: &str) -> String {
    root.join(path).to_string_lossy().into_owned()
}

impl Loaded {
    /// The passages for `query` within the settings' limits, and what embedding cost (the
    /// chunks' vectors, when this query made them, and the query's). Lexical without an
    /// embedder, or when embedding fails (the failure is returned beside, to be recorded).
    pub(crate) async fn retrieve(
        &self,
        query: &str,
        settings: &KnowledgeSettings,
    ) -> (Result<Retrieval, String>, EmbeddingUsage, Option<String>) {
        let limits = settings.retrieval;
        let lexical = || self.lexical.search(query, limits).map_err(|e| e.to_string());
        let Some(embedder) = &settings.embedder else {
            return (lexical(), EmbeddingUsage::default(), None);
        };
        let mut spent = EmbeddingUsage::default();
        let base = self
            .hybrid
            .get_or_try_init(|| async {
                let mut base = KnowledgeBase::build(&self.set, settings.chunks).map_err(|e| e.to_string())?;
                match base.embed(&**embedder).await {
                    Ok(usage) => {
                        spent = usage;
                        Ok(Arc::new(base))
                    }
                    Err(failure) => {
                        spent = failure.spent;
                        Err(failure.to_string())
                    }
                }
            })
            .await;
        let base = match base {
            Ok(base) => base.clone(),
            Err(why) => return (lexical(), spent, Some(format!("the knowledge could not be embedded: {why}"))),
        };
        match base.search_hybrid(query, &**embedder, limits).await {
            Ok(found) => {
                let usage = spent + found.usage;
                (Ok(found), usage, None)
            }
            Err(agents_knowledge::KnowledgeError::Embed(failure)) => {
                let why = format!("the query could not be embedded: {failure}");
                (lexical(), spent + failure.spent, Some(why))
            }
            Err(e) => (Err(e.to_string()), spent, None),
        }
    }
}
