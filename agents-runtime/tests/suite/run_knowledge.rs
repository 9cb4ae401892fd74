//! Knowledge wired into runs. The agent's documents reach the model as a user-role data
//! message, never in the system prompt; a value the model copies from a passage into a call
//! that reaches out waits for a person; the events and the audit log name the passages used
//! (ids and hashes, never text); a source changed, missing or added on disk since the agent
//! was built refuses the start and nothing runs; the macro and the loader compute the same
//! manifest entries; embedding tokens count in the run's spend.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::agents_core::manifest::Manifest;
use agents_runtime::audit::{AuditResult, AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::knowledge::{KnowledgeSettings, PASSAGES_OPEN, ScriptedEmbedder, Source, SourceLimits, SourceSet};
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
