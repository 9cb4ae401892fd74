//! The client of the OpenAI embeddings wire format: [`OpenAiEmbedder`] posts
//! `{"model", "input": [...]}` to `{base_url}/embeddings` and reads `data[i].embedding`
//! (placed by `data[i].index` when the server gives it) and `usage.prompt_tokens`. OpenAI,
//! and the servers that copy its API (vLLM, llama.cpp, Ollama's `/v1`), answer it.
//!
//! The HTTP call is the providers' ([`agents_provider::JsonEndpoint`]): the key never
//! travels in clear to another machine and never appears in an error or in `Debug`, the call
//! has one deadline with bounded retries on 429 and 5xx, and the answer is read under a body
//! limit (8 MiB by default here: enough for 64 vectors of 3 072 numbers). What the server
//! answers is then checked whole ([`Embeddings::checked`]).
//!
//! ```no_run
//! use agents_knowledge::{Embedder, OpenAiEmbedder, OpenAiEmbeddingConfig};
//! use agents_provider::ApiKey;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let key = ApiKey::new(std::env::var("OPENAI_API_KEY")?);
//! let embedder = OpenAiEmbedder::new(OpenAiEmbeddingConfig::openai("text-embedding-3-small", key))?;
//! let answer = embedder.embed(&["How long is probation?".to_string()]).await?;
//! println!("{} numbers, {} tokens", answer.vectors[0].len(), answer.usage.tokens);
//! # Ok(())
//! # }
//! ```

use agents_core::BoxFuture;
use agents_provider::{ApiKey, JsonEndpoint, PriceTable, ProviderHttpOptions, ProviderLimits};
use serde_json::{Value, json};

use crate::embed::{Embedder, EmbeddingUsage, Embeddings};
use crate::error::EmbedError;

/// How to reach an embeddings endpoint. `Debug` never shows the key.
#[derive(Debug, Clone)]
pub struct OpenAiEmbeddingConfig {
    /// The name reported by [`Embedder::name`]: `openai` or `openai-compatible`.
    pub name: String,
    /// The model id.
    pub model: String,
    /// The API root, up to and including `/v1` (`/embeddings` is appended).
    pub base_url: String,
    /// The key, sent as `Authorization: Bearer`.
    pub api_key: Option<ApiKey>,
    /// The variable the key comes from, named when the server refuses it.
    pub key_env_var: String,
    /// The vector length to ask for (`dimensions`), when the model supports choosing it.
    pub dimensions: Option<u32>,
    /// Timeout, retries and limits (the body limit defaults to 8 MiB here).
    pub http: ProviderHttpOptions,
    /// Prices per model (USD per million input tokens; the output price is not used): a
    /// priced model's calls count against a run's budget in USD ([`Embedder::cost_usd`]).
    /// Empty by default: calls cost 0.
    pub prices: PriceTable,
}

impl OpenAiEmbeddingConfig {
    /// The default limit on an answer's body here.
    pub const DEFAULT_MAX_BODY_BYTES: usize = 8 << 20;

    /// Hosted OpenAI.
    pub fn openai(model: impl Into<String>, api_key: ApiKey) -> Self {
        Self {
            name: "openai".into(),
            model: model.into(),
            base_url: "https://api.openai.com/v1".into(),
            api_key: Some(api_key),
            key_env_var: "OPENAI_API_KEY".into(),
            dimensions: None,
            http: Self::default_http(),
            prices: PriceTable::new(),
        }
    }

    /// Any server of the same wire format, without a key.
    pub fn compatible(model: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            name: "openai-compatible".into(),
            model: model.into(),
            base_url: base_url.into(),
            api_key: None,
            key_env_var: "AGENTS_EMBEDDINGS_API_KEY".into(),
            dimensions: None,
            http: Self::default_http(),
            prices: PriceTable::new(),
        }
    }

    /// Sets the key and the variable it came from.
    pub fn with_api_key(mut self, api_key: ApiKey, env_var: impl Into<String>) -> Self {
        self.api_key = Some(api_key);
        self.key_env_var = env_var.into();
        self
    }

    /// Sets the prices its calls are counted at.
    ///
    /// ```
    /// use agents_knowledge::{Embedder, EmbeddingUsage, OpenAiEmbedder, OpenAiEmbeddingConfig};
    /// use agents_provider::PriceTable;
    ///
    /// let prices = PriceTable::new().with_price("text-embedding-3-small", 0.02, 0.0)?;
    /// let config = OpenAiEmbeddingConfig::compatible("text-embedding-3-small", "http://127.0.0.1:8080/v1");
    /// let embedder = OpenAiEmbedder::new(config.with_prices(prices))?;
    /// let usage = EmbeddingUsage { calls: 1, inputs: 1, tokens: 1_000_000, estimated: false };
    /// assert_eq!(embedder.cost_usd(&usage), 0.02);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_prices(mut self, prices: PriceTable) -> Self {
        self.prices = prices;
        self
    }

    fn default_http() -> ProviderHttpOptions {
        let limits = ProviderLimits { max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES, ..ProviderLimits::default() };
        ProviderHttpOptions { limits, ..ProviderHttpOptions::default() }
    }
}

/// An [`Embedder`] speaking the OpenAI embeddings wire format (see the [module docs](self)).
#[derive(Debug)]
pub struct OpenAiEmbedder {
    config: OpenAiEmbeddingConfig,
    endpoint: JsonEndpoint,
}

impl OpenAiEmbedder {
    /// Checks the configuration (an http(s) base URL; no key in clear to another machine) and
    /// builds the HTTP client.
    pub fn new(config: OpenAiEmbeddingConfig) -> Result<Self, EmbedError> {
        let endpoint = JsonEndpoint::new(
            &config.base_url,
            "embeddings",
            config.api_key.clone(),
            config.key_env_var.clone(),
            config.http.clone(),
        )?;
        Ok(Self { config, endpoint })
    }

    /// The JSON body sent for `inputs`.
    pub fn request_body(&self, inputs: &[String]) -> Value {
        let mut body = json!({"model": self.config.model, "input": inputs, "encoding_format": "float"});
        if let Some(d) = self.config.dimensions {
            body["dimensions"] = json!(d);
        }
        body
    }

    async fn call(&self, inputs: &[String]) -> Result<Embeddings, EmbedError> {
        let answer = self.endpoint.post(&self.request_body(inputs)).await?;
        let embeddings = read_answer(&answer, inputs)?;
        embeddings.checked(inputs.len(), self.config.dimensions.map(|d| d as usize))
    }
}

/// Reads `data[i].embedding` (placed by `data[i].index` when present) and the usage.
fn read_answer(answer: &Value, inputs: &[String]) -> Result<Embeddings, EmbedError> {
    let data = answer
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| EmbedError::Protocol("there is no `data` array".into()))?;
    if data.len() != inputs.len() {
        return Err(EmbedError::Count { expected: inputs.len(), got: data.len() });
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; data.len()];
    for (position, item) in data.iter().enumerate() {
        let index =
            match item.get("index") {
                None => position,
                Some(v) => v.as_u64().and_then(|i| usize::try_from(i).ok()).filter(|&i| i < vectors.len()).ok_or_else(
                    || EmbedError::Protocol(format!("`data[{position}].index` is not an input's position")),
                )?,
            };
        let numbers = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| EmbedError::Protocol(format!("`data[{position}].embedding` is not an array of numbers")))?;
        let vector =
            numbers.iter().map(|n| n.as_f64().map(|x| x as f32)).collect::<Option<Vec<f32>>>().ok_or_else(|| {
                EmbedError::Protocol(format!("`data[{position}].embedding` holds a value that is not a number"))
            })?;
        if vectors[index].replace(vector).is_some() {
            return Err(EmbedError::Protocol(format!("two vectors have the index {index}")));
        }
    }
    let vectors = vectors.into_iter().map(|v| v.unwrap_or_default()).collect();
    let reported = answer.pointer("/usage/prompt_tokens").and_then(Value::as_u64);
    let usage = EmbeddingUsage {
        calls: 1,
        inputs: inputs.len() as u64,
        tokens: reported.unwrap_or_else(|| EmbeddingUsage::estimate_tokens(inputs)),
        estimated: reported.is_none(),
    };
    Ok(Embeddings { vectors, usage })
}

impl Embedder for OpenAiEmbedder {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn embed<'a>(&'a self, inputs: &'a [String]) -> BoxFuture<'a, Result<Embeddings, EmbedError>> {
        Box::pin(self.call(inputs))
    }

    fn cost_usd(&self, usage: &EmbeddingUsage) -> f64 {
        self.config.prices.cost(&self.config.model, usage.tokens, 0).unwrap_or(0.0)
    }
}
