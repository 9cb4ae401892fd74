//! The models an agent may run on: a provider kind, a model id and the host of the provider's
//! base URL, declared in `agent!` (`models: [...]`) and written in the manifest. The API key is
//! never part of a declaration; a model on a network host takes one at run time, and readers of
//! the manifest show it only as masked.
//!
//! An agent that declares no models runs on any provider (its manifest has no `models` key, which
//! reads as "any"); one that declares them runs only on a provider one of them admits
//! ([`admits`]), which the runtime checks when a run starts.
//!
//! ```
//! use agents_core::models::{ModelEntry, ModelProvider, ProviderIdentity, admits};
//!
//! let declared = [ModelEntry::new(ModelProvider::OpenAi, "gpt-4.1-mini", "api.openai.com")];
//! let hosted = ProviderIdentity { provider: "openai", model: "gpt-4.1-mini", host: Some("api.openai.com") };
//! assert!(admits(&declared, &hosted));
//! let elsewhere = ProviderIdentity { host: Some("proxy.example.com"), ..hosted };
//! assert!(!admits(&declared, &elsewhere));
//! ```

use crate::policy::HostPattern;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The kind of provider a declared model is served by: the names the runtime's providers
/// report ([`ProviderIdentity::provider`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ModelProvider {
    /// Hosted OpenAI (Chat Completions); default host `api.openai.com`.
    #[serde(rename = "openai")]
    OpenAi,
    /// Hosted Anthropic (Messages); default host `api.anthropic.com`.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Any server speaking OpenAI Chat Completions; its host must be declared.
    #[serde(rename = "openai-compatible")]
    OpenAiCompatible,
    /// Any provider that reaches no network host (the scripted and rule providers, a test
    /// double): it reports no host. Declares no model id and no host.
    #[serde(rename = "offline")]
    Offline,
}

impl ModelProvider {
    /// Every kind, in the order `agent!` lists them.
    pub const ALL: [ModelProvider; 4] =
        [ModelProvider::OpenAi, ModelProvider::Anthropic, ModelProvider::OpenAiCompatible, ModelProvider::Offline];

    /// The name a provider of this kind reports, and the manifest's spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            ModelProvider::OpenAi => "openai",
            ModelProvider::Anthropic => "anthropic",
            ModelProvider::OpenAiCompatible => "openai-compatible",
            ModelProvider::Offline => "offline",
        }
    }

    /// The host of the kind's default base URL, when it has one.
    pub const fn default_host(self) -> Option<&'static str> {
        match self {
            ModelProvider::OpenAi => Some("api.openai.com"),
            ModelProvider::Anthropic => Some("api.anthropic.com"),
            ModelProvider::OpenAiCompatible | ModelProvider::Offline => None,
        }
    }

    /// Whether a model of this kind calls a network host (and so takes a key at run time).
    pub const fn is_networked(self) -> bool {
        !matches!(self, ModelProvider::Offline)
    }
}

impl fmt::Display for ModelProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A declared model as `agent!` writes it into the agent's [`crate::AgentSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpec {
    /// The provider kind.
    pub provider: ModelProvider,
    /// The model id (empty for [`ModelProvider::Offline`]).
    pub model: &'static str,
    /// The host pattern of the base URL (empty for [`ModelProvider::Offline`]).
    pub host: &'static str,
}

/// A declared model in a manifest. Never a key: see the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The provider kind.
    pub provider: ModelProvider,
    /// The model id; absent for `offline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The host of the base URL, as a [`HostPattern`] without a port; absent for `offline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl ModelEntry {
    /// A model served from `host`.
    pub fn new(provider: ModelProvider, model: &str, host: &str) -> Self {
        ModelEntry { provider, model: Some(model.to_owned()), host: Some(host.to_owned()) }
    }

    /// The `offline` entry: any provider that reaches no network host.
    pub fn offline() -> Self {
        ModelEntry { provider: ModelProvider::Offline, model: None, host: None }
    }

    /// The manifest entry of a spec.
    pub fn from_spec(spec: &ModelSpec) -> Self {
        match spec.provider {
            ModelProvider::Offline => Self::offline(),
            p => Self::new(p, spec.model, spec.host),
        }
    }

    /// Refuses an entry whose fields do not fit its kind, or whose host is not a host
    /// pattern without a port.
    pub fn check(&self) -> Result<(), ModelEntryError> {
        let refuse = |reason: String| Err(ModelEntryError { entry: self.to_string(), reason });
        match (self.provider, &self.model, &self.host) {
            (ModelProvider::Offline, None, None) => Ok(()),
            (ModelProvider::Offline, _, _) => refuse("`offline` takes no model and no host".into()),
            (_, None, _) | (_, _, None) => refuse("a model on a network provider names its model and its host".into()),
            (_, Some(m), Some(h)) => {
                if m.is_empty() || m.chars().any(char::is_control) {
                    return refuse("the model id is empty or holds control characters".into());
                }
                check_host(h).or_else(refuse)
            }
        }
    }

    /// Whether this entry admits a provider.
    pub fn admits(&self, used: &ProviderIdentity<'_>) -> bool {
        match (self.provider, used.host) {
            (ModelProvider::Offline, None) => true,
            (ModelProvider::Offline, Some(_)) | (_, None) => false,
            (kind, Some(host)) => {
                kind.as_str() == used.provider
                    && self.model.as_deref() == Some(used.model)
                    && self
                        .host
                        .as_deref()
                        .and_then(|h| HostPattern::parse(h).ok())
                        .is_some_and(|p| p.allows(host, None))
            }
        }
    }
}

impl fmt::Display for ModelEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.model, &self.host) {
            (Some(m), Some(h)) => write!(f, "{}:{m}@{h}", self.provider),
            (Some(m), None) => write!(f, "{}:{m}", self.provider),
            _ => write!(f, "{}", self.provider),
        }
    }
}

/// Refuses a model's host that is not a [`HostPattern`] or that names a port (a provider
/// reports its host without one).
pub fn check_host(host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    HostPattern::parse(host).map_err(|e| e.reason().to_owned())?;
    let port = host.rsplit_once(']').map_or(host, |(_, rest)| rest);
    if port.contains(':') {
        return Err("a model's host names no port (the whole host is admitted on any port)".into());
    }
    Ok(())
}

/// A model entry that does not fit its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model `{entry}` is refused: {reason}")]
pub struct ModelEntryError {
    /// The entry as shown.
    pub entry: String,
    /// Why.
    pub reason: String,
}

/// What a provider says it is: the name it reports (`openai`, `anthropic`,
/// `openai-compatible`, ...), its model id and the host of its base URL (`None` for a
/// provider that reaches no network host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderIdentity<'a> {
    /// The provider's name.
    pub provider: &'a str,
    /// The model id.
    pub model: &'a str,
    /// The host of its base URL, as a URL parser gives it (no port).
    pub host: Option<&'a str>,
}

impl fmt::Display for ProviderIdentity<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.host {
            Some(h) => write!(f, "{}:{}@{h}", self.provider, self.model),
            None => write!(f, "{}:{} (no network host)", self.provider, self.model),
        }
    }
}

/// The declared models in words, as `agents manifest show` and the capability report print
/// them: each model, with its key shown as masked when it takes one (the key is never in the
/// manifest); `None` is any provider.
pub fn models_text(models: Option<&[ModelEntry]>) -> String {
    let Some(models) = models else {
        return "any (none declared: the agent runs on any provider, model and host)".to_owned();
    };
    let each = |m: &ModelEntry| {
        if m.provider.is_networked() { format!("{m} (key: masked)") } else { format!("{m} (no network host)") }
    };
    models.iter().map(each).collect::<Vec<_>>().join(", ")
}

/// Whether one of the declared models admits the provider.
pub fn admits(declared: &[ModelEntry], used: &ProviderIdentity<'_>) -> bool {
    declared.iter().any(|m| m.admits(used))
}

/// The declaration that would admit `used`, as `agent!` takes it (for the refusal's help), or
/// `None` when its name is no kind `agent!` knows, so that no declaration admits it.
pub fn declaration_for(used: &ProviderIdentity<'_>) -> Option<String> {
    let Some(host) = used.host else { return Some("offline".into()) };
    let kind = ModelProvider::ALL.into_iter().find(|k| k.is_networked() && k.as_str() == used.provider)?;
    Some(match kind.default_host() {
        Some(default) if default == host => format!("{}(\"{}\")", fn_name(kind), used.model),
        _ => format!("{}(\"{}\", host = \"{host}\")", fn_name(kind), used.model),
    })
}

/// The name of a kind in `agent!`'s `models: [...]`.
pub const fn fn_name(kind: ModelProvider) -> &'static str {
    match kind {
        ModelProvider::OpenAi => "openai",
        ModelProvider::Anthropic => "anthropic",
        ModelProvider::OpenAiCompatible => "openai_compatible",
        ModelProvider::Offline => "offline",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used<'a>(provider: &'a str, model: &'a str, host: Option<&'a str>) -> ProviderIdentity<'a> {
        ProviderIdentity { provider, model, host }
    }

    #[test]
    fn a_model_is_admitted_only_by_its_kind_its_id_and_its_host() {
        let d = [ModelEntry::new(ModelProvider::Anthropic, "claude-sonnet-4-5", "api.anthropic.com")];
        assert!(admits(&d, &used("anthropic", "claude-sonnet-4-5", Some("API.anthropic.com"))));
        assert!(!admits(&d, &used("openai", "claude-sonnet-4-5", Some("api.anthropic.com"))));
        assert!(!admits(&d, &used("anthropic", "claude-opus-4", Some("api.anthropic.com"))));
        assert!(!admits(&d, &used("anthropic", "claude-sonnet-4-5", Some("anthropic.example.com"))));
        assert!(!admits(&d, &used("anthropic", "claude-sonnet-4-5", None)));
    }

    #[test]
    fn offline_admits_only_providers_without_a_host() {
        let d = [ModelEntry::offline()];
        assert!(admits(&d, &used("scripted", "script", None)));
        assert!(!admits(&d, &used("openai", "gpt-4.1", Some("api.openai.com"))));
    }

    #[test]
    fn a_subdomain_pattern_admits_subdomains_only() {
        let d = [ModelEntry::new(ModelProvider::OpenAiCompatible, "llama3.2", "*.internal.example")];
        assert!(admits(&d, &used("openai-compatible", "llama3.2", Some("gpu1.internal.example"))));
        assert!(!admits(&d, &used("openai-compatible", "llama3.2", Some("internal.example"))));
    }

    #[test]
    fn entries_that_do_not_fit_their_kind_are_refused() {
        let port = ModelEntry::new(ModelProvider::OpenAiCompatible, "m", "localhost:11434");
        assert!(port.check().unwrap_err().reason.contains("no port"));
        let url = ModelEntry::new(ModelProvider::OpenAi, "m", "https://api.openai.com");
        assert!(url.check().is_err());
        let offline_with_model = ModelEntry { model: Some("x".into()), ..ModelEntry::offline() };
        assert!(offline_with_model.check().is_err());
        let no_host = ModelEntry { host: None, ..ModelEntry::new(ModelProvider::OpenAi, "m", "h") };
        assert!(no_host.check().is_err());
        assert!(ModelEntry::new(ModelProvider::OpenAiCompatible, "m", "[::1]").check().is_ok());
    }

    #[test]
    fn the_help_names_the_declaration_that_would_admit_the_provider() {
        let declare = |p, m, h| declaration_for(&used(p, m, h));
        assert_eq!(declare("openai", "gpt-4.1", Some("api.openai.com")).unwrap(), r#"openai("gpt-4.1")"#);
        assert_eq!(
            declare("openai-compatible", "llama3.2", Some("localhost")).unwrap(),
            r#"openai_compatible("llama3.2", host = "localhost")"#
        );
        assert_eq!(declare("rules", "offline", None).unwrap(), "offline");
        // A name no kind has: no declaration would admit it, and none is suggested.
        assert_eq!(declare("openrouter", "m", Some("openrouter.ai")), None);
    }
}
