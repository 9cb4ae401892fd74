//! Choosing a provider from the environment.
//!
//! | variable | meaning |
//! | --- | --- |
//! | `AGENTS_MODEL` | `openai:<model>`, `anthropic:<model>`, `openai-compatible:<model>@<base_url>`, or `openai-compatible:<model>` with `AGENTS_BASE_URL`. Unset: no provider (examples fall back to the offline [`RuleProvider`](super::RuleProvider)). |
//! | `AGENTS_BASE_URL` | the API root, for `openai-compatible` (required unless given after `@`) or to point `openai` / `anthropic` at a proxy |
//! | `OPENAI_API_KEY` | the key for `openai` (`AGENTS_API_KEY` is accepted too) |
//! | `ANTHROPIC_API_KEY` | the key for `anthropic` (`AGENTS_API_KEY` is accepted too) |
//! | `AGENTS_API_KEY` | the key for `openai-compatible` (optional: local servers need none) |
//! | `AGENTS_TIMEOUT_SECS` | the per-call timeout in seconds (default 90) |
//! | `AGENTS_PRICE` | `<input>,<output>`: USD per million tokens for the model, so the budget counts its calls |
//! | `AGENTS_MAX_TOKENS` | the completion token limit (Anthropic default 4096) |
//! | `AGENTS_ALLOW_CLEARTEXT_KEY` | `1` to allow sending the key over `http://` to a host that is not this machine (a server on a private network you control); unset, such a configuration is refused |
//!
//! An `openai-compatible` key is never taken from `OPENAI_API_KEY`, so an OpenAI key is not
//! sent to another host by accident.
//!
//! ```
//! use agents_provider::config::ProviderConfig;
//!
//! let vars = [("AGENTS_MODEL", "openai-compatible:llama3.2@http://localhost:11434/v1")];
//! let lookup = |name: &str| {
//!     vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
//! };
//! let config = ProviderConfig::from_vars(lookup).unwrap().unwrap();
//! let described = config.describe();
//! assert_eq!(described.provider, "openai-compatible");
//! assert_eq!(described.model, "llama3.2");
//! assert!(!described.key_present);
//! ```

use super::anthropic::{AnthropicConfig, AnthropicProvider};
use super::http::{self, ApiKey, DEFAULT_TIMEOUT, ProviderHttpOptions};
use super::openai::{OpenAiConfig, OpenAiProvider};
use super::pricing::PriceTable;
use super::{Provider, ProviderError};
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// The forms `AGENTS_MODEL` accepts, as shown in errors.
pub const ACCEPTED_FORMS: &str = "openai:<model> (e.g. openai:gpt-4o-mini), anthropic:<model> \
     (e.g. anthropic:claude-sonnet-4-5), openai-compatible:<model>@<base_url> (e.g. \
     openai-compatible:llama3.2@http://localhost:11434/v1), or openai-compatible:<model> with \
     AGENTS_BASE_URL set";

/// Which wire protocol and defaults to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub enum ProviderKind {
    /// Hosted OpenAI (Chat Completions).
    #[serde(rename = "openai")]
    OpenAi,
    /// Hosted Anthropic (Messages).
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Any server speaking OpenAI Chat Completions (OpenRouter, vLLM, llama.cpp, Ollama).
    #[serde(rename = "openai-compatible")]
    OpenAiCompatible,
}

impl ProviderKind {
    /// The name used in `AGENTS_MODEL` and reported by [`Provider::name`].
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::OpenAiCompatible => "openai-compatible",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the provider configuration could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `AGENTS_MODEL` is set but not in an accepted form.
    #[error("AGENTS_MODEL=`{value}` is not understood ({reason}); accepted forms: {ACCEPTED_FORMS}")]
    Malformed {
        /// The value of `AGENTS_MODEL`.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A hosted provider was chosen but its key is not set.
    #[error(
        "AGENTS_MODEL selects {provider}, but no API key is set: set {variable} (AGENTS_API_KEY \
         is accepted too), or unset AGENTS_MODEL to run offline"
    )]
    MissingKey {
        /// The provider.
        provider: ProviderKind,
        /// The variable to set.
        variable: String,
    },
    /// Another variable has a value that cannot be used.
    #[error("{variable}=`{value}` is not valid: expected {expected}")]
    Invalid {
        /// The variable.
        variable: String,
        /// Its value (URLs without credentials).
        value: String,
        /// What it should look like.
        expected: String,
    },
    /// The provider could not be built from a valid configuration.
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// A provider chosen by configuration. `Debug` never shows the key.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The protocol.
    pub kind: ProviderKind,
    /// The model id.
    pub model: String,
    /// The API root.
    pub base_url: String,
    /// The key, when one is set.
    pub api_key: Option<ApiKey>,
    /// The variable the key came from (or should come from), named in errors.
    pub key_env_var: String,
    /// The per-call timeout.
    pub timeout: Duration,
    /// Prices used to turn usage into cost.
    pub prices: PriceTable,
    /// The completion token limit, when set.
    pub max_tokens: Option<u32>,
    /// Whether the key may travel over `http://` to another machine
    /// ([`ProviderHttpOptions::allow_cleartext_key`]).
    pub allow_cleartext_key: bool,
}

/// What a runtime manifest may record about the provider: never the key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderDescription {
    /// `openai`, `anthropic` or `openai-compatible`.
    pub provider: String,
    /// The model id.
    pub model: String,
    /// The API root, without credentials or query.
    pub base_url: String,
    /// Whether a key is configured.
    pub key_present: bool,
    /// The variable the key comes from.
    pub key_env_var: String,
    /// Whether calls count against the budget.
    pub paid: bool,
    /// Whether the price table prices this model (else calls cost 0).
    pub price_known: bool,
    /// The per-call timeout in seconds.
    pub timeout_secs: f64,
}

impl ProviderConfig {
    /// Reads the configuration from the process environment (see the module documentation).
    /// `Ok(None)` when `AGENTS_MODEL` is unset or empty.
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a variable name to its value); the pure core
    /// of [`from_env`](Self::from_env). Empty values count as unset.
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, ConfigError> {
        let var = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let Some(value) = var("AGENTS_MODEL") else {
            return Ok(None);
        };
        let choice = ModelChoice::parse(&value)?;
        let base_url = choice.base_url(var("AGENTS_BASE_URL"))?;
        let (api_key, key_env_var) = api_key(choice.kind, &var)?;
        let config = Self {
            kind: choice.kind,
            model: choice.model.to_string(),
            base_url,
            api_key,
            key_env_var: key_env_var.into(),
            timeout: timeout(var("AGENTS_TIMEOUT_SECS"))?,
            prices: prices(choice.model, var("AGENTS_PRICE"))?,
            max_tokens: max_tokens(var("AGENTS_MAX_TOKENS"))?,
            allow_cleartext_key: cleartext_opt_in(var("AGENTS_ALLOW_CLEARTEXT_KEY"))?,
        };
        let options =
            ProviderHttpOptions { allow_cleartext_key: config.allow_cleartext_key, ..ProviderHttpOptions::default() };
        http::check_key_transport(&config.base_url, config.api_key.is_some(), &options)?;
        Ok(Some(config))
    }

    /// Whether calls with this configuration cost money: hosted providers always, an
    /// OpenAI-compatible server unless it runs on this machine.
    pub fn is_paid(&self) -> bool {
        match self.kind {
            ProviderKind::OpenAi | ProviderKind::Anthropic => true,
            ProviderKind::OpenAiCompatible => !http::is_loopback(&self.base_url),
        }
    }

    /// Provider, model, base URL and whether a key is present, for a runtime manifest.
    /// Never the key.
    pub fn describe(&self) -> ProviderDescription {
        ProviderDescription {
            provider: self.kind.as_str().into(),
            model: self.model.clone(),
            base_url: http::display_url(&self.base_url),
            key_present: self.api_key.is_some(),
            key_env_var: self.key_env_var.clone(),
            paid: self.is_paid(),
            price_known: self.prices.lookup(&self.model).is_some(),
            timeout_secs: self.timeout.as_secs_f64(),
        }
    }

    /// Builds the provider.
    pub fn build(&self) -> Result<Box<dyn Provider>, ConfigError> {
        let http = ProviderHttpOptions {
            timeout: self.timeout,
            allow_cleartext_key: self.allow_cleartext_key,
            ..ProviderHttpOptions::default()
        };
        Ok(match self.kind {
            ProviderKind::Anthropic => {
                let Some(key) = self.api_key.clone() else {
                    return Err(ConfigError::MissingKey { provider: self.kind, variable: "ANTHROPIC_API_KEY".into() });
                };
                let mut config = AnthropicConfig::new(self.model.clone(), key)
                    .with_base_url(self.base_url.clone())
                    .with_key_env_var(self.key_env_var.clone())
                    .with_http(http)
                    .with_prices(self.prices.clone());
                if let Some(max) = self.max_tokens {
                    config.max_tokens = max;
                }
                Box::new(AnthropicProvider::new(config)?)
            }
            ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => {
                let mut config = OpenAiConfig::compatible(self.model.clone(), self.base_url.clone())
                    .with_http(http)
                    .with_prices(self.prices.clone());
                config.name = self.kind.as_str().into();
                config.paid = self.is_paid();
                config.key_env_var = self.key_env_var.clone();
                config.api_key = self.api_key.clone();
                config.max_tokens = self.max_tokens;
                Box::new(OpenAiProvider::new(config)?)
            }
        })
    }
}

/// What `AGENTS_MODEL` names: the protocol, the model, and a base URL written after `@`.
struct ModelChoice<'a> {
    /// The variable's value, quoted by errors.
    value: &'a str,
    kind: ProviderKind,
    model: &'a str,
    inline_base: Option<&'a str>,
}

impl<'a> ModelChoice<'a> {
    /// Reads `provider:model[@base_url]`.
    fn parse(value: &'a str) -> Result<Self, ConfigError> {
        let malformed = |reason: &str| ConfigError::Malformed { value: value.to_string(), reason: reason.into() };
        let Some((prefix, rest)) = value.split_once(':') else {
            return Err(malformed("it has no `provider:` prefix"));
        };
        let kind = match prefix.trim().to_ascii_lowercase().as_str() {
            "openai" => ProviderKind::OpenAi,
            "anthropic" => ProviderKind::Anthropic,
            "openai-compatible" => ProviderKind::OpenAiCompatible,
            _ => return Err(malformed(&format!("unknown provider `{prefix}`"))),
        };
        let (model, inline_base) = split_base_url(rest);
        if let Some(at) = model.find('@')
            && inline_base.is_none()
            && !model[at + 1..].is_empty()
        {
            return Err(malformed("the base URL after `@` must start with http:// or https://"));
        }
        let model = model.trim().trim_end_matches('@').trim();
        if model.is_empty() {
            return Err(malformed("the model is missing after the `:`"));
        }
        Ok(Self { value, kind, model, inline_base })
    }

    /// The API root: the one after `@`, else `AGENTS_BASE_URL` (`from_var`), else the hosted
    /// provider's; checked, without a trailing slash.
    fn base_url(&self, from_var: Option<String>) -> Result<String, ConfigError> {
        let (base_url, base_var) = match (self.inline_base, from_var) {
            (Some(base), _) => (base.to_string(), "AGENTS_MODEL"),
            (None, Some(base)) => (base, "AGENTS_BASE_URL"),
            (None, None) => match self.kind {
                ProviderKind::OpenAi => (OpenAiConfig::OPENAI_BASE_URL.into(), ""),
                ProviderKind::Anthropic => (AnthropicConfig::DEFAULT_BASE_URL.into(), ""),
                ProviderKind::OpenAiCompatible => {
                    return Err(ConfigError::Malformed {
                        value: self.value.to_string(),
                        reason: "openai-compatible needs a base URL: write it after `@` or set AGENTS_BASE_URL".into(),
                    });
                }
            },
        };
        http::normalize_base_url(&base_url).map_err(|_| ConfigError::Invalid {
            variable: base_var.into(),
            value: http::display_url(&base_url),
            expected: "an http:// or https:// URL such as http://localhost:11434/v1".into(),
        })
    }
}

/// The key and the variable it came from: a hosted provider's own variable, else
/// `AGENTS_API_KEY` (one of them required); for `openai-compatible`, `AGENTS_API_KEY` only.
fn api_key(
    kind: ProviderKind,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<(Option<ApiKey>, &'static str), ConfigError> {
    let own = match kind {
        ProviderKind::OpenAi => "OPENAI_API_KEY",
        ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        ProviderKind::OpenAiCompatible => return Ok((var("AGENTS_API_KEY").map(ApiKey::new), "AGENTS_API_KEY")),
    };
    match (var(own), var("AGENTS_API_KEY")) {
        (Some(key), _) => Ok((Some(ApiKey::new(key)), own)),
        (None, Some(key)) => Ok((Some(ApiKey::new(key)), "AGENTS_API_KEY")),
        (None, None) => Err(ConfigError::MissingKey { provider: kind, variable: own.into() }),
    }
}

/// `AGENTS_TIMEOUT_SECS`: seconds, more than 0 and at most a day (unset: 90 s).
fn timeout(text: Option<String>) -> Result<Duration, ConfigError> {
    let Some(text) = text else {
        return Ok(DEFAULT_TIMEOUT);
    };
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| ConfigError::Invalid {
            variable: "AGENTS_TIMEOUT_SECS".into(),
            value: text.clone(),
            expected: "a number of seconds greater than 0, such as 90 or 0.5".into(),
        })
}

/// `AGENTS_PRICE`: `<input>,<output>` for `model`, checked as every other way a price enters
/// a table (unset: no prices).
fn prices(model: &str, text: Option<String>) -> Result<PriceTable, ConfigError> {
    let Some(text) = text else {
        return Ok(PriceTable::new());
    };
    let parsed =
        text.split_once(',').and_then(|(i, o)| Some((i.trim().parse::<f64>().ok()?, o.trim().parse::<f64>().ok()?)));
    let checked = parsed.ok_or(None).and_then(|(i, o)| PriceTable::new().with_price(model, i, o).map_err(Some));
    checked.map_err(|refused| ConfigError::Invalid {
        variable: "AGENTS_PRICE".into(),
        value: text,
        expected: match refused {
            Some(e) => format!("`<input>,<output>` in USD per million tokens, such as 0.15,0.60 ({e})"),
            None => "`<input>,<output>` in USD per million tokens, such as 0.15,0.60".into(),
        },
    })
}

/// `AGENTS_MAX_TOKENS`: a whole number of tokens above 0 (unset: none sent).
fn max_tokens(text: Option<String>) -> Result<Option<u32>, ConfigError> {
    let Some(text) = text else {
        return Ok(None);
    };
    match text.parse::<u32>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(ConfigError::Invalid {
            variable: "AGENTS_MAX_TOKENS".into(),
            value: text,
            expected: "a whole number of tokens greater than 0, such as 4096".into(),
        }),
    }
}

/// `AGENTS_ALLOW_CLEARTEXT_KEY`: `1` opts in, `0` or unset does not.
fn cleartext_opt_in(text: Option<String>) -> Result<bool, ConfigError> {
    match text.as_deref() {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(ConfigError::Invalid {
            variable: "AGENTS_ALLOW_CLEARTEXT_KEY".into(),
            value: other.into(),
            expected: "1 (allow the key over http:// to a private network) or 0".into(),
        }),
    }
}

/// Splits `model@http(s)://base` at the last `@` that starts a URL.
fn split_base_url(rest: &str) -> (&str, Option<&str>) {
    let at = ["@https://", "@http://"].iter().filter_map(|marker| rest.rfind(marker)).max();
    match at {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    }
}

/// The provider chosen by the environment (see [`ProviderConfig::from_env`]), built; `Ok(None)`
/// when `AGENTS_MODEL` is unset, so callers can fall back to an offline provider:
///
/// ```no_run
/// use agents_provider::{Provider, RuleProvider, provider_from_env};
///
/// let provider: Box<dyn Provider> = match provider_from_env()? {
///     Some(provider) => provider,
///     None => Box::new(RuleProvider::new().on_keyword("weather", "get_weather", "{}")),
/// };
/// # Ok::<(), agents_provider::ConfigError>(())
/// ```
pub fn provider_from_env() -> Result<Option<Box<dyn Provider>>, ConfigError> {
    ProviderConfig::from_env()?.map(|config| config.build()).transpose()
}
