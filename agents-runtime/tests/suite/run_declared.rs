//! The models and budget an agent declares, held against what runs: a run on a provider whose
//! kind, model or host the manifest does not name is refused before anything is recorded; a
//! declared provider runs; an agent that declares no models runs on any provider; a budget cap
//! per run stops the run before the model call that would go past it.

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatRequest, ChatResponse, Provider, ProviderError, ScriptedProvider, TokenSink};
use agents_runtime::run::StartError;
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, agent, permissions, tool};
use futures::future::BoxFuture;
use std::sync::Arc;

permissions! {
    pub mod perms { notes.read }
}

/// Reads notes.
#[tool(permission = perms::notes::read)]
async fn read_notes() -> Result<String, String> {
    Ok("none".into())
}

agent! {
    /// Runs on hosted OpenAI and on a local server only.
    pub struct Declared;
    tools: [read_notes],
    models: [openai("gpt-4.1-mini"), openai_compatible("llama3.2", host = "localhost")],
}

agent! {
    /// Declares no models.
    pub struct Open;
    tools: [read_notes],
}

agent! {
    /// Runs offline only, within 150 tokens a run.
    pub struct Capped;
    tools: [read_notes],
    models: [offline],
    budget: { tokens_per_run: 150 },
}

/// A provider that says what it is (as the HTTP providers do) and answers from a script.
struct Claims {
    name: &'static str,
    model: &'static str,
    host: Option<&'static str>,
    script: ScriptedProvider,
}

impl Provider for Claims {
    fn name(&self) -> &str {
        self.name
    }
    fn model(&self) -> &str {
        self.model
    }
    fn is_paid(&self) -> bool {
        false
    }
    fn host(&self) -> Option<String> {
        self.host.map(str::to_owned)
    }
    fn chat<'a>(
        &'a self,
        r: &'a ChatRequest,
        t: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        self.script.chat(r, t)
    }
}

fn claims(name: &'static str, model: &'static str, host: Option<&'static str>) -> Arc<Claims> {
    Arc::new(Claims { name, model, host, script: ScriptedProvider::new([reply("done")]) })
}

fn runtime(audit: Arc<MemorySink>, provider: Arc<dyn Provider>) -> Runtime {
    Runtime::builder(audit, provider).roles(RoleMap::new().role("reader", ["notes.read"])).build()
}

fn me() -> Principal {
    Principal::new("u1", "org1", "reader")
}

#[tokio::test]
async fn a_provider_the_manifest_does_not_name_is_refused_before_anything_is_recorded() {
    for (provider, help) in [
        // The declared model on another host (a proxy, a look-alike).
        (
            claims("openai", "gpt-4.1-mini", Some("api.openai.example")),
            r#"openai("gpt-4.1-mini", host = "api.openai.example")"#,
        ),
        // Another model on the declared host.
        (claims("openai", "gpt-4.1", Some("api.openai.com")), r#"openai("gpt-4.1")"#),
        // The declared model and host under another kind.
        (
            claims("anthropic", "gpt-4.1-mini", Some("api.openai.com")),
            r#"anthropic("gpt-4.1-mini", host = "api.openai.com")"#,
        ),
        // A provider with no host where none is declared offline.
        (claims("scripted", "script", None), "offline"),
        // A name no kind has: nothing to declare, and the error says so.
        (claims("openrouter", "gpt-4.1-mini", Some("api.openai.com")), ""),
    ] {
        let audit = Arc::new(MemorySink::new());
        let rt = runtime(audit.clone(), provider.clone());
        let err = rt.start::<Declared>(me(), "s1", "hi".to_owned()).unwrap_err();
        let StartError::ModelNotDeclared(e) = &err else { panic!("{err:?}") };
        let text = err.to_string();
        assert!(text.contains("agent `Declared` may not run on"), "{text}");
        match help {
            "" => assert!(text.contains("no declaration admits a provider of that name"), "{text}"),
            help => assert!(text.contains(&format!("declare `{help}`")), "{text}"),
        }
        assert_eq!(e.declared, "`openai:gpt-4.1-mini@api.openai.com`, `openai-compatible:llama3.2@localhost`");
        assert!(audit.records().is_empty(), "nothing may be recorded for a refused start");
        assert_eq!(provider.script.remaining(), 1, "the provider was not called");
    }
}

#[tokio::test]
async fn a_declared_provider_runs() {
    for provider in [
        claims("openai", "gpt-4.1-mini", Some("api.openai.com")),
        claims("openai-compatible", "llama3.2", Some("LOCALHOST")),
    ] {
        let audit = Arc::new(MemorySink::new());
        let out = runtime(audit, provider).start::<Declared>(me(), "s1", "hi".to_owned()).unwrap().wait().await;
        assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    }
}

#[tokio::test]
async fn an_agent_that_declares_no_models_runs_on_any_provider() {
    let provider = claims("openai-compatible", "anything", Some("models.example.net"));
    let out =
        runtime(Arc::new(MemorySink::new()), provider).start::<Open>(me(), "s1", "hi".to_owned()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert!(Declared::MANIFEST.contains(r#""models":["#));
    assert!(!Open::MANIFEST.contains(r#""models""#), "no `models` key: any provider");
}

#[tokio::test]
async fn a_token_cap_per_run_stops_the_run_before_the_call_that_would_go_past_it() {
    let used = |tokens: u64, mut r: ChatResponse| {
        r.usage.input_tokens = tokens;
        r
    };
    let provider = Arc::new(ScriptedProvider::new([
        used(100, tool_call("read_notes", "{}")),
        used(100, tool_call("read_notes", "{}")),
        used(100, reply("done")),
    ]));
    let audit = Arc::new(MemorySink::new());
    let out =
        runtime(audit.clone(), provider.clone()).start::<Capped>(me(), "s1", "hi".to_owned()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::BudgetExhausted, "{out:?}");
    assert_eq!(provider.remaining(), 1, "two calls made (100, then 200 tokens), the third refused");
    let notices: Vec<String> =
        audit.records().iter().filter(|r| r.status == AuditStatus::Notice).filter_map(|r| r.reason.clone()).collect();
    assert!(
        notices.iter().any(|n| n.contains("the run has used 200 model tokens; the agent's cap is 150 per run")),
        "{notices:?}"
    );
}

#[test]
fn a_declared_model_id_is_checked_in_const_evaluation() {
    const MODEL: &str = Declared::declared_model("gpt-4.1-mini");
    assert_eq!(MODEL, "gpt-4.1-mini");
    // Outside a `const` the same check is a panic.
    assert!(std::panic::catch_unwind(|| Declared::declared_model("gpt-5")).is_err());
    assert_eq!(Open::declared_model("anything"), "anything");
}

/// The HTTP providers report the host of their base URL: a local server named by address is
/// not the `localhost` the agent declares, and a hosted provider moved to another base URL is
/// not the hosted one. Nothing is sent (the runs are refused before any call).
#[cfg(feature = "http")]
#[tokio::test]
async fn the_http_providers_are_held_to_the_host_of_their_base_url() {
    use agents_runtime::provider::{AnthropicConfig, AnthropicProvider, ApiKey, OpenAiConfig, OpenAiProvider};
    let by_address = OpenAiProvider::new(OpenAiConfig::compatible("llama3.2", "http://127.0.0.1:11434/v1")).unwrap();
    assert_eq!(by_address.host().as_deref(), Some("127.0.0.1"));
    let mut moved = OpenAiConfig::openai("gpt-4.1-mini", ApiKey::new("sk-test"));
    moved.base_url = "https://llm-gateway.example.net/v1".into();
    let moved = OpenAiProvider::new(moved).unwrap();
    let anthropic = AnthropicProvider::new(AnthropicConfig::new("claude-sonnet-4-5", ApiKey::new("sk-test"))).unwrap();
    assert_eq!(anthropic.host().as_deref(), Some("api.anthropic.com"));
    for (provider, help) in [
        (Arc::new(by_address) as Arc<dyn Provider>, r#"openai_compatible("llama3.2", host = "127.0.0.1")"#),
        (Arc::new(moved), r#"openai("gpt-4.1-mini", host = "llm-gateway.example.net")"#),
        (Arc::new(anthropic), r#"anthropic("claude-sonnet-4-5")"#),
    ] {
        let audit = Arc::new(MemorySink::new());
        let err = runtime(audit.clone(), provider).start::<Declared>(me(), "s1", "hi".to_owned()).unwrap_err();
        assert!(err.to_string().contains(&format!("declare `{help}`")), "{err}");
        assert!(!err.to_string().contains("sk-test"), "the key never appears: {err}");
        assert!(audit.records().is_empty());
    }
    let hosted = OpenAiProvider::new(OpenAiConfig::openai("gpt-4.1-mini", ApiKey::new("sk-test"))).unwrap();
    let rt = runtime(Arc::new(MemorySink::new()), Arc::new(hosted));
    let run = rt.start::<Declared>(me(), "s1", "hi".to_owned()).expect("the declared hosted model is admitted");
    run.stop();
    let _ = run.wait().await;
}
