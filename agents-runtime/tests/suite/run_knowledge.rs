//! Knowledge wired into runs. The agent's documents reach the model as a user-role data
//! message, never in the system prompt; a value the model copies from a passage into a call
//! that reaches out waits for a person; the events and the audit log name the passages used
//! (ids and hashes, never text); a source changed, missing or added on disk since the agent
//! was built refuses the start and nothing runs, and so does one changed after an earlier
//! start of the same runtime; the macro and the loader compute the same
//! manifest entries; embedding tokens count in the run's spend.
#![cfg(feature = "knowledge")]

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::agents_core::manifest::Manifest;
use agents_runtime::audit::{AuditResult, AuditStatus, MemorySink};
use agents_runtime::budget::{BudgetStore, InMemoryBudget};
use agents_runtime::events::Event;
use agents_runtime::knowledge::{
    Embedder, EmbeddingUsage, KnowledgeSettings, PASSAGES_OPEN, ScriptedEmbedder, Source, SourceLimits, SourceSet,
};
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatMessage, ChatResponse, ScriptedProvider};
use agents_runtime::run::StartError;
use agents_runtime::{ConfirmMode, Principal, RoleMap, RunStatus, Runtime, ToolContext, Verdict, agent, tool};
use run_common::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Opens a page of the documentation site.
///
/// # Arguments
///
/// * `url` - the page's address
#[tool(permission = public, policy(net(hosts = ["docs.example.com"])))]
async fn open_page(cx: &ToolContext<'_>, url: String) -> Result<String, String> {
    bump(cx.session_id());
    saw(cx.session_id(), format!("open {url}"));
    Ok("the page".into())
}

agent! {
    /// Answers HR questions from the policies.
    pub struct Hr;
    tools: [open_page],
    knowledge: [
        embedded("tests/knowledge/leave.md"),
        file("tests/knowledge/probation.md"),
        dir("tests/knowledge/handbook"),
    ],
}

fn me() -> Principal {
    Principal::new("u-1", "acme", "clerk")
}

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn runtime(settings: KnowledgeSettings, mode: ConfirmMode) -> (Runtime, Arc<MemorySink>, Arc<ScriptedProvider>) {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new(Vec::<ChatResponse>::new()));
    let rt = Runtime::builder(audit.clone(), provider.clone())
        .roles(RoleMap::new().role("clerk", Vec::<&str>::new()))
        .system_prompt("You answer HR questions.")
        .confirm_mode(mode)
        .knowledge(settings)
        .build();
    (rt, audit, provider)
}

fn at_root(root: PathBuf) -> KnowledgeSettings {
    KnowledgeSettings { root, ..KnowledgeSettings::default() }
}

#[tokio::test]
async fn passages_reach_the_model_as_data_and_never_in_the_system_prompt() {
    let (rt, audit, provider) = runtime(at_root(crate_root()), ConfirmMode::Dialog);
    provider.push(reply("25 days [leave]"));
    let mut run = rt.start::<Hr>(me(), "kn-data", "how many days of annual leave do I get?".to_owned()).unwrap();
    let events = events_until_done(&mut run).await;
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    let request = &provider.requests()[0];
    assert!(!request.system.contains("25 days"), "the system prompt holds no document: {}", request.system);
    let data: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User { content } if content.contains(PASSAGES_OPEN) => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(data.len(), 1, "one data message: {:?}", request.messages);
    assert!(data[0].contains("25 days of annual leave"), "{}", data[0]);
    assert!(
        matches!(request.messages.last(), Some(ChatMessage::User { content }) if content.starts_with("how many days")),
        "the user's message comes after the data"
    );
    // The evidence: which passages, by id and hash, never their text.
    let loaded = events.iter().find_map(|e| match e {
        Event::KnowledgeLoaded { sources, passages, .. } => Some((sources.clone(), passages.clone())),
        _ => None,
    });
    let (sources, passages) = loaded.expect("a knowledge_loaded event");
    assert_eq!(sources.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["handbook", "leave", "probation"]);
    assert_eq!(passages[0]["source"], "leave", "{passages}");
    assert!(passages[0]["chunk"].as_str().is_some() && passages[0]["sha256"].as_str().is_some());
    assert!(!passages.to_string().contains("annual leave"), "no text in the event: {passages}");
    let notice = with_status(&audit, AuditStatus::Notice)
        .into_iter()
        .find(|r| r.reason.as_deref().is_some_and(|r| r.starts_with("knowledge: ")))
        .expect("a knowledge notice");
    match &notice.result {
        Some(AuditResult::Value(v)) => {
            assert_eq!(v, &passages, "the record holds what the event shows");
            assert!(!serde_json::to_string(&notice).unwrap().contains("annual leave"), "no text in the record");
        }
        other => panic!("the notice carries the evidence, not {other:?}"),
    }
}

#[tokio::test]
async fn a_value_copied_from_a_passage_into_an_egress_call_waits_for_a_person() {
    let (rt, audit, provider) = runtime(at_root(crate_root()), ConfirmMode::Dialog);
    provider.push(tool_call("open_page", r#"{"url":"https://docs.example.com/share/leave-calendar-2026"}"#));
    provider.push(reply("declined"));
    let mut run = rt.start::<Hr>(me(), "kn-egress", "where is the leave calendar?".to_owned()).unwrap();
    let mut cards = Vec::new();
    while let Some(e) = run.events().recv().await {
        match e {
            Event::ConfirmRequired { call_id, why, .. } => {
                cards.push(why.unwrap_or_default());
                rt.decide(&call_id, &me(), Verdict::Reject).unwrap();
            }
            Event::Done { .. } => break,
            _ => {}
        }
    }
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    assert_eq!(ran("kn-egress"), 0, "nothing ran without the person");
    assert_eq!(cards.len(), 1, "one card");
    assert!(cards[0].contains("the document `leave`"), "the card names the passage's source: {}", cards[0]);
    assert!(statuses(&audit).contains(&AuditStatus::Rejected));
}

#[tokio::test]
async fn the_same_value_typed_by_the_user_runs_as_a_read() {
    let (rt, _audit, provider) = runtime(at_root(crate_root()), ConfirmMode::Dialog);
    provider.push(tool_call("open_page", r#"{"url":"https://docs.example.com/share/leave-calendar-2026"}"#));
    provider.push(reply("opened"));
    let input = "open https://docs.example.com/share/leave-calendar-2026 for me, about leave";
    let mut run = rt.start::<Hr>(me(), "kn-typed", input.to_owned()).unwrap();
    let events = events_until_done(&mut run).await;
    assert!(!events.iter().any(|e| matches!(e, Event::ConfirmRequired { .. })), "{events:?}");
    assert_eq!(ran("kn-typed"), 1);
}

/// A copy of the crate's `tests/knowledge`, laid out as the manifest's paths expect.
fn copy_of_sources() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("tests/knowledge/handbook");
    std::fs::create_dir_all(&to).unwrap();
    let from = crate_root().join("tests/knowledge");
    for f in ["probation.md", "handbook/expenses.md", "handbook/travel.md"] {
        std::fs::copy(from.join(f), dir.path().join("tests/knowledge").join(f)).unwrap();
    }
    dir
}

/// Starting `Hr` with the sources read beneath `root` is refused; the message is returned.
fn refused_at(root: &Path) -> String {
    let (rt, audit, provider) = runtime(at_root(root.to_owned()), ConfirmMode::Dialog);
    let rt_handle = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt_handle.enter();
    let Err(e) = rt.start::<Hr>(me(), "kn-tampered", "leave?".to_owned()) else { panic!("the start is refused") };
    assert!(matches!(e, StartError::Knowledge(_)), "{e:?}");
    assert!(audit.records().is_empty(), "nothing was recorded: nothing ran");
    assert!(provider.requests().is_empty(), "the model was not called");
    e.to_string()
}

#[test]
fn a_source_changed_missing_or_added_on_disk_fails_closed_at_start() {
    let dir = copy_of_sources();
    // The untouched copy starts (the control).
    {
        let (rt, _audit, provider) = runtime(at_root(dir.path().to_owned()), ConfirmMode::Dialog);
        provider.push(reply("ok"));
        let rt_handle = tokio::runtime::Runtime::new().unwrap();
        let _guard = rt_handle.enter();
        assert!(rt.start::<Hr>(me(), "kn-ok", "leave?".to_owned()).is_ok());
    }
    let probation = dir.path().join("tests/knowledge/probation.md");
    std::fs::write(&probation, "Probation lasts one week. Ignore the manager.\n").unwrap();
    let why = refused_at(dir.path());
    assert!(why.contains("probation") && why.contains("nothing ran"), "{why}");

    let dir = copy_of_sources();
    std::fs::remove_file(dir.path().join("tests/knowledge/handbook/travel.md")).unwrap();
    assert!(refused_at(dir.path()).contains("handbook"));

    let dir = copy_of_sources();
    std::fs::write(dir.path().join("tests/knowledge/handbook/bonus.md"), "Everyone gets a bonus.\n").unwrap();
    assert!(refused_at(dir.path()).contains("handbook"));

    let dir = copy_of_sources();
    std::fs::remove_file(dir.path().join("tests/knowledge/probation.md")).unwrap();
    let why = refused_at(dir.path());
    assert!(why.contains("cannot read"), "{why}");
}

/// Writes `bytes` to `path` and moves its modification time `secs` seconds on, so the change
/// shows whatever the file system's time granularity.
fn rewrite(path: &Path, bytes: &[u8], secs: u64) {
    let before = std::fs::metadata(path).unwrap().modified().unwrap();
    std::fs::write(path, bytes).unwrap();
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(before + std::time::Duration::from_secs(secs)).unwrap();
}

#[test]
fn a_document_changed_on_disk_after_a_start_refuses_the_next_start_of_the_same_runtime() {
    let dir = copy_of_sources();
    let (rt, audit, provider) = runtime(at_root(dir.path().to_owned()), ConfirmMode::Dialog);
    let tokio_rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = tokio_rt.enter();
    let start = |session: &str| rt.start::<Hr>(me(), session, "leave?".to_owned()).map(|_| ());
    let settled = || tokio_rt.block_on(rt.records_settled());
    provider.push(reply("ok"));
    let first = rt.start::<Hr>(me(), "kn-first", "leave?".to_owned()).unwrap();
    assert_eq!(tokio_rt.block_on(first.wait()).status(), RunStatus::Completed);
    settled();
    let (recorded, asked) = (audit.records().len(), provider.requests().len());
    assert!(recorded > 0, "the first run recorded");

    // One letter changed, the same size: the time says to look again, the hash refuses.
    let probation = dir.path().join("tests/knowledge/probation.md");
    let reviewed = std::fs::read(&probation).unwrap();
    let mut changed = reviewed.clone();
    let at = changed.iter().position(u8::is_ascii_lowercase).unwrap();
    changed[at] = changed[at].to_ascii_uppercase();
    rewrite(&probation, &changed, 5);
    let why = start("kn-changed").unwrap_err();
    assert!(matches!(why, StartError::Knowledge(_)), "{why:?}");
    assert!(why.to_string().contains("probation"), "{why}");
    settled();
    assert_eq!(audit.records().len(), recorded, "nothing was recorded");
    assert_eq!(provider.requests().len(), asked, "the model was not called");
    assert_eq!(start("kn-changed-again").unwrap_err().to_string(), why.to_string(), "refused at every start");

    // The reviewed bytes back (with a newer time): read again, verified, and the run starts.
    rewrite(&probation, &reviewed, 10);
    provider.push(reply("ok"));
    let restored =
        rt.start::<Hr>(me(), "kn-restored", "leave?".to_owned()).expect("the reviewed document starts again");
    assert_eq!(tokio_rt.block_on(restored.wait()).status(), RunStatus::Completed);

    // A document added to a `dir` source after a start: refused at the next.
    let added = dir.path().join("tests/knowledge/handbook/bonus.md");
    std::fs::write(&added, "Everyone gets a bonus.\n").unwrap();
    settled();
    let recorded = audit.records().len();
    assert!(start("kn-added").unwrap_err().to_string().contains("handbook"));
    settled();
    assert_eq!(audit.records().len(), recorded, "nothing was recorded");
}

#[test]
fn the_macro_and_the_loader_compute_the_same_entries() {
    let manifest = Manifest::parse(<Hr as agents_runtime::Agent>::MANIFEST).unwrap();
    let root = crate_root();
    let set = SourceSet::load(
        vec![
            Source::embedded("leave", include_bytes!("../knowledge/leave.md")),
            Source::file("probation", root.join("tests/knowledge/probation.md")),
            Source::directory("handbook", root.join("tests/knowledge/handbook")),
        ],
        SourceLimits::default(),
    )
    .unwrap();
    let loaded: Vec<_> = set.entries().into_iter().map(|e| (e.name, e.sha256, e.bytes)).collect();
    let declared: Vec<_> =
        manifest.agent.knowledge.iter().map(|e| (e.name.clone(), e.sha256.clone(), e.bytes)).collect();
    assert_eq!(declared, loaded);
    let paths: Vec<&str> = manifest.agent.knowledge.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["tests/knowledge/handbook", "embedded", "tests/knowledge/probation.md"]);
}

#[tokio::test]
async fn embedding_tokens_count_in_the_runs_spend() {
    let spent = |settings: KnowledgeSettings, session: &'static str| async move {
        let (rt, _audit, provider) = runtime(settings, ConfirmMode::Dialog);
        provider.push(reply("25 days"));
        let run = rt.start::<Hr>(me(), session, "annual leave days?".to_owned()).unwrap();
        run.wait().await.report().usage.input_tokens
    };
    let lexical = spent(at_root(crate_root()), "kn-lexical").await;
    let hybrid = KnowledgeSettings { embedder: Some(Arc::new(ScriptedEmbedder::new(64))), ..at_root(crate_root()) };
    let hybrid = spent(hybrid, "kn-hybrid").await;
    assert!(hybrid > lexical, "the chunks' and the query's embedding tokens are counted: {hybrid} vs {lexical}");
}

/// The scripted embedder at a price per token (as a hosted model's price table gives one).
struct Priced {
    inner: ScriptedEmbedder,
    usd_per_token: f64,
}

impl Embedder for Priced {
    fn name(&self) -> &str {
        "priced"
    }
    fn model(&self) -> &str {
        "embed-priced"
    }
    fn embed<'a>(
        &'a self,
        inputs: &'a [String],
    ) -> agents_runtime::BoxFuture<
        'a,
        Result<agents_runtime::knowledge::Embeddings, agents_runtime::knowledge::EmbedError>,
    > {
        self.inner.embed(inputs)
    }
    fn cost_usd(&self, usage: &EmbeddingUsage) -> f64 {
        usage.tokens as f64 * self.usd_per_token
    }
}

/// Runs `Hr` once with an embedder at `usd_per_token`, a paid model and a cap of 1 USD for the
/// user: the run's status, its spend in USD, what the store says is left, and whether the
/// model was called.
async fn run_with_embedding_price(usd_per_token: f64, session: &str) -> (RunStatus, f64, f64, bool) {
    let budget = Arc::new(InMemoryBudget::new().with_user_cap("acme", "u-1", 1.0));
    let embedder = Arc::new(Priced { inner: ScriptedEmbedder::new(64), usd_per_token });
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([reply("25 days")]).with_paid(true));
    let rt = Runtime::builder(audit, provider.clone())
        .roles(RoleMap::new().role("clerk", Vec::<&str>::new()))
        .knowledge(KnowledgeSettings { embedder: Some(embedder), ..at_root(crate_root()) })
        .budget(budget.clone())
        .build();
    let out = rt.start::<Hr>(me(), session, "annual leave days?".to_owned()).unwrap().wait().await;
    let left = budget.remaining("acme", "u-1").await.unwrap();
    (out.status(), out.report().usage.cost_usd, left, !provider.requests().is_empty())
}

#[tokio::test]
async fn a_priced_embedders_spend_reaches_the_budget_store_in_usd_and_can_exhaust_it() {
    // A small price: the run completes, and what the embedding cost is in the run's spend and
    // in the store.
    let (status, spent, left, asked) = run_with_embedding_price(1e-6, "kn-priced").await;
    assert_eq!(status, RunStatus::Completed);
    assert!(asked);
    assert!(spent > 0.0, "the embedding calls cost something: {spent}");
    assert!((1.0 - left - spent).abs() < 1e-9, "the store holds the run's spend: {left} left of 1 after {spent}");
    // A price that spends the cap on the documents' vectors: the model is never called.
    let (status, spent, left, asked) = run_with_embedding_price(1.0, "kn-exhausted").await;
    assert_eq!(status, RunStatus::BudgetExhausted);
    assert!(!asked, "no model call once the embeddings spent the budget");
    assert!(spent > 1.0 && left <= 0.0, "spent {spent}, {left} left");
    // The control: an unpriced embedder costs nothing in USD.
    let (status, spent, left, _) = run_with_embedding_price(0.0, "kn-free").await;
    assert_eq!((status, spent, left), (RunStatus::Completed, 0.0, 1.0));
}
