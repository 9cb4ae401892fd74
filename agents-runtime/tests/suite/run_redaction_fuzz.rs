//! A call's secret values never leave the runtime: random secrets, tools that echo them or
//! fail quoting them (as written, base64, hex, percent-encoded), arguments the strict or the
//! typed parse refuses while quoting them, and a run whose outcome error quotes one, scanned
//! for in the audit records, the events, the tracing output (every span and event, every
//! field, at every level) and every result or error text, in all four forms.
//!
//! `AGENTS_REDACTION_CASES` sets the number of cases (10^4 by default; the full proof runs
//! 10^5: `AGENTS_REDACTION_CASES=100000 cargo test -p agents-runtime --test suite run_redaction_fuzz::`).

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::MemorySink;
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::{Principal, RoleMap, Runtime, Secret, ToolContext, agent, permissions, tool};
use base64::Engine as _;
use proptest::prelude::*;
use std::sync::Arc;

permissions! {
    pub mod perms { vault.open }
}

fn forms(secret: &str) -> [String; 4] {
    [
        secret.to_owned(),
        base64::engine::general_purpose::STANDARD.encode(secret),
        hex::encode(secret),
        secret.bytes().map(|b| format!("%{b:02X}")).collect(),
    ]
}

/// A login the tool checks.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
pub struct Login {
    user: String,
    pin: Secret<String>,
}

/// Uses a secret and says so in one of its forms, as a result or as an error.
#[tool(permission = perms::vault::open)]
async fn use_secret(cx: &ToolContext<'_>, login: Login, form: u8, fail: bool) -> Result<String, String> {
    let _ = cx;
    let pin = login.pin.expose();
    let shown = forms(pin)[usize::from(form % 4)].clone();
    let text = format!("{} used {shown} just now", login.user);
    if fail { Err(text) } else { Ok(text) }
}

/// Returns the secret nested in a structure.
#[tool(permission = perms::vault::open)]
async fn nest_secret(cx: &ToolContext<'_>, token: Secret<String>) -> Result<serde_json::Value, String> {
    let _ = cx;
    Ok(serde_json::json!({"outer": [{"token": token.expose()}], token.expose().clone(): 1}))
}

agent! {
    /// Vault user.
    pub struct Vault;
    audit: { values: full },
    tools: [use_secret, nest_secret],
}

/// What the run variant's model must answer with.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Receipt {
    ok: bool,
}

agent! {
    /// Vault user whose answer is typed.
    pub struct VaultRun;
    audit: { values: full },
    tools: [use_secret],
    output: Receipt,
}

/// Every span, event and field the runtime writes to tracing, as text.
#[derive(Clone, Default)]
struct Capture {
    text: Arc<std::sync::Mutex<String>>,
    next: Arc<std::sync::atomic::AtomicU64>,
}

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut text = self.text.lock().unwrap();
        text.push_str(&format!("\nspan {}", span.metadata().name()));
        span.record(&mut Fields(&mut text));
        tracing::span::Id::from_u64(1 + self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut Fields(&mut self.text.lock().unwrap()));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut text = self.text.lock().unwrap();
        text.push_str(&format!("\nevent {}", event.metadata().level()));
        event.record(&mut Fields(&mut text));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn cases() -> u32 {
    std::env::var("AGENTS_REDACTION_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000)
}

/// How a case calls.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// `use_secret` with the secret as the PIN.
    Plain,
    /// `nest_secret`: the secret comes back nested in the result, as a key too.
    Nested,
    /// `form` holds the secret, so the typed parse refuses it, quoting it.
    BadType,
    /// The PIN is a number beyond 2^53 (the secret's digits), so the strict parse refuses
    /// it, quoting it; the PIN is also given twice.
    HugeNumber,
    /// A run whose model calls `use_secret`, then answers with JSON that does not fit the
    /// output type and quotes the secret, so the run's outcome error quotes it.
    Run,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Plain),
        Just(Shape::Nested),
        Just(Shape::BadType),
        Just(Shape::HugeNumber),
        Just(Shape::Run)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn no_secret_value_leaks_in_any_form(
        text_secret in "[A-Za-z0-9_-]{8,24}",
        digit_secret in "[1-9][0-9]{16,22}",
        user in "[a-z]{1,6}",
        form in 0u8..4,
        fail in any::<bool>(),
        shape in shape(),
    ) {
        let secret = if matches!(shape, Shape::HugeNumber) { digit_secret } else { text_secret };
        let capture = Capture::default();
        let _tracing = tracing::subscriber::set_default(capture.clone());
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let seen = rt.block_on(async {
            let audit = Arc::new(MemorySink::new());
            let login = serde_json::json!({"user": user, "pin": secret});
            let call_args = serde_json::json!({"login": login, "form": form, "fail": fail}).to_string();
            let provider = Arc::new(ScriptedProvider::new([
                tool_call("use_secret", &call_args),
                reply(serde_json::json!({"ok": secret}).to_string()),
            ]));
            let runtime = Runtime::builder(audit.clone(), provider)
                .roles(RoleMap::new().role("user", ["vault.open"]))
                .record_raw_results(true)
                .build();
            let principal = Principal::new("u1", "org1", "user");
            if let Shape::Run = shape {
                let run = runtime.start::<VaultRun>(principal, "fuzz-run", "go".into()).unwrap();
                let mut events = run.subscribe();
                let out = run.wait().await;
                assert!(out.error_text().is_some(), "the answer does not fit the output type: {out:?}");
                runtime.records_settled().await;
                // The model's own answer (the outcome's text, the message and token events) is
                // passed on as the model wrote it; every text the runtime derives is scanned.
                let mut seen = format!("{:?}{}", out.error_text(), serde_json::to_string(&audit.records()).unwrap());
                while let Ok(e) = events.try_recv() {
                    if !matches!(e, Event::Message { .. } | Event::Token { .. }) {
                        seen.push_str(&format!("{e:?}"));
                    }
                }
                return seen;
            }
            let session = runtime.direct::<Vault>(principal, "fuzz", None).await.unwrap();
            let mut events = session.subscribe();
            let (name, args) = match shape {
                Shape::Nested => ("nest_secret", serde_json::json!({"token": secret}).to_string()),
                // The form is not a number: the typed parse refuses the call, quoting what it read.
                Shape::BadType => ("use_secret", serde_json::json!({"login": login, "form": secret, "fail": fail}).to_string()),
                Shape::HugeNumber => ("use_secret", format!(
                    r#"{{"login": {{"user": "{user}", "pin": {secret}, "pin": {secret}}}, "form": {form}, "fail": {fail}}}"#
                )),
                _ => ("use_secret", call_args),
            };
            let out = session.call("c1", name, &args).await;
            if let Shape::HugeNumber = shape {
                assert!(out.is_error, "{out:?}");
            }
            drop(session);
            runtime.records_settled().await;
            let mut seen = format!("{out:?}{}", serde_json::to_string(&audit.records()).unwrap());
            while let Ok(e) = events.try_recv() {
                seen.push_str(&format!("{e:?}"));
            }
            seen
        });
        let traced = capture.text.lock().unwrap().clone();
        prop_assert!(traced.contains("span execute_tool"), "the tool call's span is traced: {}", traced);
        let seen = format!("{seen}{traced}");
        for f in forms(&secret) {
            prop_assert!(!seen.contains(&f), "`{}` leaked as `{}` in {}", secret, f, seen);
        }
    }
}
