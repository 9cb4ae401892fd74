//! Choosing a provider from environment variables (through the pure `from_vars`).
#![cfg(feature = "http")]

use agents_runtime::provider::config::ACCEPTED_FORMS;
use agents_runtime::provider::{ConfigError, ProviderConfig, ProviderKind};
use std::time::Duration;

fn parse(vars: &[(&str, &str)]) -> Result<Option<ProviderConfig>, ConfigError> {
    ProviderConfig::from_vars(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
}

fn config(vars: &[(&str, &str)]) -> ProviderConfig {
    parse(vars).unwrap().expect("a provider is configured")
}

#[test]
fn unset_or_empty_means_no_provider() {
    assert!(parse(&[]).unwrap().is_none());
    assert!(parse(&[("AGENTS_MODEL", "  ")]).unwrap().is_none());
    assert!(parse(&[("OPENAI_API_KEY", "sk-x")]).unwrap().is_none());
}

#[test]
fn openai_with_its_key() {
    let c = config(&[("AGENTS_MODEL", "openai:gpt-4o-mini"), ("OPENAI_API_KEY", "sk-live-123")]);
    assert_eq!(c.kind, ProviderKind::OpenAi);
    assert_eq!(c.model, "gpt-4o-mini");
    assert_eq!(c.base_url, "https://api.openai.com/v1");
    assert_eq!(c.key_env_var, "OPENAI_API_KEY");
    assert_eq!(c.timeout, Duration::from_secs(90));
    assert!(c.is_paid());
    let provider = c.build().unwrap();
    assert_eq!((provider.name(), provider.model()), ("openai", "gpt-4o-mini"));
    assert!(provider.is_paid());
}

#[test]
fn anthropic_with_the_generic_key() {
    let c = config(&[("AGENTS_MODEL", "anthropic:claude-sonnet-4-5"), ("AGENTS_API_KEY", "sk-ant-9")]);
    assert_eq!(c.kind, ProviderKind::Anthropic);
    assert_eq!(c.base_url, "https://api.anthropic.com");
    assert_eq!(c.key_env_var, "AGENTS_API_KEY");
    let provider = c.build().unwrap();
    assert_eq!(provider.name(), "anthropic");
}

#[test]
fn the_providers_own_key_wins_over_the_generic_one() {
    let c = config(&[
        ("AGENTS_MODEL", "anthropic:claude-haiku-4-5"),
        ("AGENTS_API_KEY", "generic"),
        ("ANTHROPIC_API_KEY", "own"),
    ]);
    assert_eq!(c.key_env_var, "ANTHROPIC_API_KEY");
}

#[test]
fn openai_compatible_with_inline_base_url() {
    let c = config(&[("AGENTS_MODEL", "openai-compatible:llama3.2:3b@http://localhost:11434/v1/")]);
    assert_eq!(c.kind, ProviderKind::OpenAiCompatible);
    assert_eq!(c.model, "llama3.2:3b");
    assert_eq!(c.base_url, "http://localhost:11434/v1");
    assert!(c.api_key.is_none());
    assert!(!c.is_paid(), "a local server is free");
    let provider = c.build().unwrap();
    assert_eq!(provider.name(), "openai-compatible");
    assert!(!provider.is_paid());
}

#[test]
fn openai_compatible_with_agents_base_url_and_key() {
    let c = config(&[
        ("AGENTS_MODEL", "openai-compatible:meta-llama/llama-3.3-70b-instruct"),
        ("AGENTS_BASE_URL", "https://openrouter.ai/api/v1"),
        ("AGENTS_API_KEY", "sk-or-1"),
        ("OPENAI_API_KEY", "sk-openai-must-not-leak"),
    ]);
    assert_eq!(c.model, "meta-llama/llama-3.3-70b-instruct");
    assert_eq!(c.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(c.key_env_var, "AGENTS_API_KEY");
    assert!(c.is_paid());
    assert!(!format!("{c:?}").contains("sk-or-1"));
}

#[test]
fn an_openai_key_is_never_sent_to_a_compatible_server() {
    let c = config(&[("AGENTS_MODEL", "openai-compatible:m@https://example.com/v1"), ("OPENAI_API_KEY", "sk-openai")]);
    assert!(c.api_key.is_none());
}

#[test]
fn agents_base_url_points_a_hosted_provider_at_a_proxy() {
    let c = config(&[
        ("AGENTS_MODEL", "openai:gpt-4o"),
        ("OPENAI_API_KEY", "k"),
        ("AGENTS_BASE_URL", "https://proxy.internal/openai/v1"),
    ]);
    assert_eq!(c.base_url, "https://proxy.internal/openai/v1");
}

#[test]
fn malformed_values_list_the_accepted_forms() {
    for value in
        ["gpt-4o-mini", "gemini:pro", "openai:", "openai-compatible:llama3", "openai-compatible:llama3@localhost:11434"]
    {
        let err = parse(&[("AGENTS_MODEL", value), ("OPENAI_API_KEY", "k")]).unwrap_err();
        assert!(matches!(err, ConfigError::Malformed { .. }), "{value}: {err:?}");
        let text = err.to_string();
        assert!(text.contains(value), "{text}");
        assert!(text.contains(ACCEPTED_FORMS), "{text}");
    }
}

#[test]
fn a_missing_key_names_the_variable() {
    let err = parse(&[("AGENTS_MODEL", "openai:gpt-4o-mini")]).unwrap_err();
    assert_eq!(err, ConfigError::MissingKey { provider: ProviderKind::OpenAi, variable: "OPENAI_API_KEY".into() });
    assert!(err.to_string().contains("set OPENAI_API_KEY"));
    let err = parse(&[("AGENTS_MODEL", "anthropic:claude-x"), ("ANTHROPIC_API_KEY", "")]).unwrap_err();
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
}

#[test]
fn a_bad_base_url_is_refused_without_showing_credentials() {
    let err = parse(&[("AGENTS_MODEL", "openai-compatible:m"), ("AGENTS_BASE_URL", "ftp://user:secretpw@host/v1")])
        .unwrap_err();
    assert!(matches!(&err, ConfigError::Invalid { variable, .. } if variable == "AGENTS_BASE_URL"), "{err:?}");
    assert!(!err.to_string().contains("secretpw"), "{err}");
}

#[test]
fn timeout_price_and_max_tokens_are_read() {
    let c = config(&[
        ("AGENTS_MODEL", "openai:gpt-4o-mini"),
        ("OPENAI_API_KEY", "k"),
        ("AGENTS_TIMEOUT_SECS", "0.5"),
        ("AGENTS_PRICE", "0.15, 0.60"),
        ("AGENTS_MAX_TOKENS", "1024"),
    ]);
    assert_eq!(c.timeout, Duration::from_millis(500));
    assert_eq!(c.prices.cost("gpt-4o-mini", 1_000_000, 0), Some(0.15));
    assert_eq!(c.max_tokens, Some(1024));
    assert!(c.describe().price_known);
}

#[test]
fn invalid_numbers_say_what_is_expected() {
    for (var, value) in [
        ("AGENTS_TIMEOUT_SECS", "0"),
        ("AGENTS_TIMEOUT_SECS", "ninety"),
        ("AGENTS_PRICE", "0.15"),
        ("AGENTS_PRICE", "-1,2"),
        ("AGENTS_PRICE", "1,-0.5"),
        ("AGENTS_PRICE", "NaN,1"),
        ("AGENTS_PRICE", "1,inf"),
        ("AGENTS_PRICE", "-inf,1"),
        ("AGENTS_MAX_TOKENS", "0"),
    ] {
        let err = parse(&[("AGENTS_MODEL", "openai:gpt-4o-mini"), ("OPENAI_API_KEY", "k"), (var, value)]).unwrap_err();
        match &err {
            ConfigError::Invalid { variable, .. } => assert_eq!(variable, var),
            other => panic!("{var}={value}: expected Invalid, got {other:?}"),
        }
        assert!(err.to_string().contains("expected"), "{err}");
    }
}

#[test]
fn describe_says_whether_a_key_is_present_but_never_the_key() {
    let c = config(&[("AGENTS_MODEL", "anthropic:claude-sonnet-4-5"), ("ANTHROPIC_API_KEY", "sk-ant-very-secret")]);
    let d = c.describe();
    assert_eq!(d.provider, "anthropic");
    assert_eq!(d.model, "claude-sonnet-4-5");
    assert!(d.key_present);
    assert_eq!(d.key_env_var, "ANTHROPIC_API_KEY");
    assert!(!d.price_known);
    assert_eq!(d.timeout_secs, 90.0);
    let json = serde_json::to_string(&d).unwrap();
    assert!(json.contains(r#""key_present":true"#), "{json}");
    assert!(!json.contains("sk-ant-very-secret"));
    assert!(!format!("{c:?}").contains("sk-ant-very-secret"));
    assert!(!format!("{:?}", c.build().unwrap()).contains("sk-ant-very-secret"));
}
