//! Offline providers: [`ScriptedProvider`] replays queued answers (tests), [`RuleProvider`]
//! answers by rules (demos without an API key). Neither touches the network and neither is
//! paid unless configured so.

use super::{ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use super::{ToolCallRequest, Usage};
use crate::BoxFuture;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// A plain text answer (no tool calls, no usage).
pub fn reply(text: impl Into<String>) -> ChatResponse {
    ChatResponse { content: text.into(), tool_calls: Vec::new(), usage: Usage::default() }
}

/// An answer that calls one tool with `arguments` (raw JSON text). The id is left empty; the
/// offline providers fill it with `call_1`, `call_2`, ... in the order they hand calls out.
pub fn tool_call(name: impl Into<String>, arguments: impl Into<String>) -> ChatResponse {
    tool_calls([(name, arguments)])
}

/// An answer that calls several tools at once (parallel tool calls), ids as for
/// [`tool_call`].
pub fn tool_calls<N: Into<String>, A: Into<String>>(calls: impl IntoIterator<Item = (N, A)>) -> ChatResponse {
    ChatResponse {
        content: String::new(),
        tool_calls: calls
            .into_iter()
            .map(|(name, arguments)| ToolCallRequest {
                id: String::new(),
                name: name.into(),
                arguments: arguments.into(),
            })
            .collect(),
        usage: Usage::default(),
    }
}

/// Sends `text` to the sink in up to four fragments split after whitespace, as a streaming
/// model would; the fragments concatenate to exactly `text`.
fn stream_in_fragments(text: &str, tokens: &dyn TokenSink) {
    let pieces: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    if pieces.is_empty() {
        return;
    }
    let per_fragment = pieces.len().div_ceil(4);
    for group in pieces.chunks(per_fragment) {
        tokens.token(&group.concat());
    }
}

/// Gives calls without an id the next `call_N` id.
fn assign_ids(response: &mut ChatResponse, counter: &AtomicU64) {
    for call in &mut response.tool_calls {
        if call.id.is_empty() {
            call.id = format!("call_{}", counter.fetch_add(1, Ordering::Relaxed) + 1);
        }
    }
}

/// The setters of an offline provider's `name`, `model` and `paid` fields.
macro_rules! identity_setters {
    () => {
        /// Sets the provider name.
        pub fn with_name(mut self, name: impl Into<String>) -> Self {
            self.name = name.into();
            self
        }

        /// Sets the model id.
        pub fn with_model(mut self, model: impl Into<String>) -> Self {
            self.model = model.into();
            self
        }

        /// Makes the provider count as paid (to exercise the budget gate; the cost of each
        /// call is the `usage.cost_usd` of its response).
        pub fn with_paid(mut self, paid: bool) -> Self {
            self.paid = paid;
            self
        }
    };
}

/// The [`Provider`] accessors of an offline provider's `name`, `model` and `paid` fields.
macro_rules! identity_accessors {
    () => {
        fn name(&self) -> &str {
            &self.name
        }

        fn model(&self) -> &str {
            &self.model
        }

        fn is_paid(&self) -> bool {
            self.paid
        }
    };
}

/// A provider that returns queued responses in order, for tests and scripted demos.
///
/// Each response's text is streamed to the [`TokenSink`] in a few fragments; each request is
/// recorded for assertions; when the queue is empty the call fails with an error saying so.
///
/// ```
/// use agents_provider::scripted::{ScriptedProvider, reply, tool_call};
/// use agents_provider::{ChatMessage, ChatRequest, Provider};
///
/// let provider = ScriptedProvider::new([
///     tool_call("get_weather", r#"{"city":"Oslo"}"#),
///     reply("It is 4 °C in Oslo."),
/// ]);
/// let request = ChatRequest {
///     system: String::new(),
///     messages: vec![ChatMessage::User { content: "Weather in Oslo?".into() }],
///     tools: vec![],
///     response_schema: None,
/// };
/// let ignore = |_: &str| {};
/// let first = futures::executor::block_on(provider.chat(&request, &ignore)).unwrap();
/// assert_eq!(first.tool_calls[0].id, "call_1");
/// let second = futures::executor::block_on(provider.chat(&request, &ignore)).unwrap();
/// assert_eq!(second.content, "It is 4 °C in Oslo.");
/// assert!(futures::executor::block_on(provider.chat(&request, &ignore)).is_err());
/// assert_eq!(provider.requests().len(), 3);
/// ```
pub struct ScriptedProvider {
    name: String,
    model: String,
    paid: bool,
    queue: Mutex<VecDeque<ChatResponse>>,
    served: AtomicU64,
    next_id: AtomicU64,
    requests: Mutex<Vec<ChatRequest>>,
}

impl fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("paid", &self.paid)
            .field("remaining", &self.remaining())
            .finish()
    }
}

impl ScriptedProvider {
    /// A provider named `scripted`, model `script`, not paid, answering with `responses`.
    pub fn new(responses: impl IntoIterator<Item = ChatResponse>) -> Self {
        Self {
            name: "scripted".into(),
            model: "script".into(),
            paid: false,
            queue: Mutex::new(responses.into_iter().collect()),
            served: AtomicU64::new(0),
            next_id: AtomicU64::new(0),
            requests: Mutex::new(Vec::new()),
        }
    }

    identity_setters!();

    /// Appends a response to the queue.
    pub fn push(&self, response: ChatResponse) {
        lock(&self.queue).push_back(response);
    }

    /// How many responses are left.
    pub fn remaining(&self) -> usize {
        lock(&self.queue).len()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.requests).clone()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Provider for ScriptedProvider {
    identity_accessors!();

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        tokens: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            lock(&self.requests).push(request.clone());
            let next = lock(&self.queue).pop_front();
            let Some(mut response) = next else {
                let served = self.served.load(Ordering::Relaxed);
                return Err(ProviderError::Other(format!(
                    "the scripted provider has no response left: all {served} scripted \
                     responses were used and call {} asked for one more; script more \
                     responses or expect the run to end sooner",
                    served + 1
                )));
            };
            self.served.fetch_add(1, Ordering::Relaxed);
            assign_ids(&mut response, &self.next_id);
            stream_in_fragments(&response.content, tokens);
            Ok(response)
        })
    }
}

/// One tool result of the current turn, as seen by [`RuleProvider`] rules and summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolOutcome<'a> {
    /// The call's id.
    pub call_id: &'a str,
    /// The tool name.
    pub name: &'a str,
    /// The result or error text.
    pub content: &'a str,
    /// Whether the call failed or was refused.
    pub is_error: bool,
}

/// The text of the last user message, if any.
pub fn last_user_message(request: &ChatRequest) -> Option<&str> {
    request.messages.iter().rev().find_map(|m| match m {
        ChatMessage::User { content } => Some(content.as_str()),
        _ => None,
    })
}

/// The tool results that arrived after the last user message (this turn's tool rounds).
pub fn tool_outcomes(request: &ChatRequest) -> Vec<ToolOutcome<'_>> {
    let start = request.messages.iter().rposition(|m| matches!(m, ChatMessage::User { .. })).map_or(0, |i| i + 1);
    request.messages[start..]
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool { call_id, name, content, is_error } => {
                Some(ToolOutcome { call_id, name, content, is_error: *is_error })
            }
            _ => None,
        })
        .collect()
}

type RuleFn = dyn Fn(&ChatRequest) -> Option<ChatResponse> + Send + Sync;
type SummaryFn = dyn Fn(&[ToolOutcome<'_>]) -> String + Send + Sync;

enum Rule {
    Custom(Box<RuleFn>),
    Keyword { keywords: Vec<String>, tool: String, template: String },
}

/// A rule-based offline model, good enough to drive an example agent interactively without
/// an API key.
///
/// For each request, in order:
///
/// 1. Custom rules ([`when`](Self::when)) see the whole request; the first that returns
///    `Some` answers. They run in every round, so a custom rule decides itself what to do
///    after tool results (see [`tool_outcomes`]).
/// 2. If tool results arrived in this turn (after the last user message), the answer is a
///    summary of them ([`summarize_with`](Self::summarize_with) to change it); no tool is
///    called again, so a run ends after one tool round.
/// 3. Keyword rules ([`on_keyword`](Self::on_keyword)) whose keyword appears as a whole word
///    in the last user message (case-insensitive) call their tool, all matching rules at once
///    (parallel calls). A rule only fires when its tool is offered in the request (the run's
///    availability snapshot) and its argument template can be filled.
/// 4. Otherwise a plain answer: the [`fallback`](Self::fallback) text, or one listing the
///    keywords it understands.
///
/// Argument templates are JSON text with placeholders: `{message}` (the user's message,
/// escaped for a JSON string), `{number}` (the first whole number in it) and `{after:WORD}`
/// (the word following `WORD`, escaped for a JSON string). Other braces are literal.
///
/// ```
/// use agents_provider::scripted::RuleProvider;
/// use agents_provider::{ChatMessage, ChatRequest, Provider, ToolDefinition};
/// use serde_json::json;
///
/// let model = RuleProvider::new()
///     .on_keyword("weather", "get_weather", r#"{"city": "{after:in}"}"#)
///     .on_keyword("patient", "get_patient", r#"{"id": {number}}"#);
///
/// let tool = |name: &str| ToolDefinition {
///     name: name.into(),
///     description: String::new(),
///     input_schema: json!({"type": "object"}),
/// };
/// let mut request = ChatRequest {
///     system: String::new(),
///     messages: vec![ChatMessage::User { content: "What's the weather in Oslo?".into() }],
///     tools: vec![tool("get_weather"), tool("get_patient")],
///     response_schema: None,
/// };
/// let ignore = |_: &str| {};
///
/// // Round 1: the keyword calls the tool.
/// let first = futures::executor::block_on(model.chat(&request, &ignore)).unwrap();
/// assert_eq!(first.tool_calls[0].name, "get_weather");
/// assert_eq!(first.tool_calls[0].arguments, r#"{"city": "Oslo"}"#);
///
/// // Round 2: with the result in hand, it summarises instead of calling again.
/// request.messages.push(ChatMessage::Assistant {
///     content: String::new(),
///     tool_calls: first.tool_calls.clone(),
/// });
/// request.messages.push(ChatMessage::Tool {
///     call_id: first.tool_calls[0].id.clone(),
///     name: "get_weather".into(),
///     content: r#"{"celsius": 4}"#.into(),
///     is_error: false,
/// });
/// let second = futures::executor::block_on(model.chat(&request, &ignore)).unwrap();
/// assert!(second.tool_calls.is_empty());
/// assert!(second.content.contains(r#"{"celsius": 4}"#));
/// ```
///
/// A custom rule, e.g. to chain two tools:
///
/// ```
/// use agents_provider::scripted::{RuleProvider, tool_call, tool_outcomes};
///
/// let model = RuleProvider::new().when(|request| {
///     let done = tool_outcomes(request);
///     // After the lookup, book; after booking, fall through to the summary.
///     match done.last().map(|o| o.name) {
///         Some("find_slot") => Some(tool_call("book_slot", r#"{"slot": 1}"#)),
///         _ => None,
///     }
/// });
/// # let _ = model;
/// ```
pub struct RuleProvider {
    name: String,
    model: String,
    paid: bool,
    rules: Vec<Rule>,
    fallback: Option<String>,
    summarize: Option<Box<SummaryFn>>,
    next_id: AtomicU64,
}

impl fmt::Debug for RuleProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleProvider")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("rules", &self.rules.len())
            .finish_non_exhaustive()
    }
}

impl Default for RuleProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl RuleProvider {
    /// A provider named `rules`, model `offline`, not paid, with no rules.
    pub fn new() -> Self {
        Self {
            name: "rules".into(),
            model: "offline".into(),
            paid: false,
            rules: Vec::new(),
            fallback: None,
            summarize: None,
            next_id: AtomicU64::new(0),
        }
    }

    identity_setters!();

    /// Adds a custom rule, consulted in every round before everything else.
    pub fn when(mut self, rule: impl Fn(&ChatRequest) -> Option<ChatResponse> + Send + Sync + 'static) -> Self {
        self.rules.push(Rule::Custom(Box::new(rule)));
        self
    }

    /// When `keyword` appears in the user's message, call `tool` with the `arguments`
    /// template (see the type's documentation for placeholders).
    pub fn on_keyword(self, keyword: impl Into<String>, tool: impl Into<String>, arguments: impl Into<String>) -> Self {
        self.on_any_keyword([keyword], tool, arguments)
    }

    /// Like [`on_keyword`](Self::on_keyword), for any of several keywords.
    pub fn on_any_keyword<K: Into<String>>(
        mut self,
        keywords: impl IntoIterator<Item = K>,
        tool: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.rules.push(Rule::Keyword {
            keywords: keywords.into_iter().map(|k| k.into().to_lowercase()).collect(),
            tool: tool.into(),
            template: arguments.into(),
        });
        self
    }

    /// The answer when no rule applies.
    pub fn fallback(mut self, text: impl Into<String>) -> Self {
        self.fallback = Some(text.into());
        self
    }

    /// How to answer once tool results arrived (default: one line per result).
    pub fn summarize_with(mut self, summarize: impl Fn(&[ToolOutcome<'_>]) -> String + Send + Sync + 'static) -> Self {
        self.summarize = Some(Box::new(summarize));
        self
    }

    fn decide(&self, request: &ChatRequest) -> ChatResponse {
        for rule in &self.rules {
            if let Rule::Custom(rule) = rule
                && let Some(response) = rule(request)
            {
                return response;
            }
        }
        let outcomes = tool_outcomes(request);
        if !outcomes.is_empty() {
            return reply(match &self.summarize {
                Some(summarize) => summarize(&outcomes),
                None => default_summary(&outcomes),
            });
        }
        let message = last_user_message(request).unwrap_or_default();
        let mut calls: Vec<(String, String)> = Vec::new();
        for rule in &self.rules {
            let Rule::Keyword { keywords, tool, template } = rule else {
                continue;
            };
            let offered = request.tools.iter().any(|t| &t.name == tool);
            if !offered || !keywords.iter().any(|k| contains_word(message, k)) {
                continue;
            }
            if let Some(arguments) = render(template, message) {
                let call = (tool.clone(), arguments);
                if !calls.contains(&call) {
                    calls.push(call);
                }
            }
        }
        if !calls.is_empty() {
            return tool_calls(calls);
        }
        reply(match &self.fallback {
            Some(text) => text.clone(),
            None => self.default_fallback(),
        })
    }

    fn default_fallback(&self) -> String {
        let mut keywords: Vec<&str> = self
            .rules
            .iter()
            .filter_map(|r| match r {
                Rule::Keyword { keywords, .. } => Some(keywords.iter().map(String::as_str)),
                Rule::Custom(_) => None,
            })
            .flatten()
            .collect();
        keywords.dedup();
        if keywords.is_empty() {
            "I am the offline rule-based model and have no rule for this. Set AGENTS_MODEL \
             (and the API key) to use a real model."
                .into()
        } else {
            format!(
                "I am the offline rule-based model and did not recognise that request. \
                 Try a message mentioning: {}.",
                keywords.join(", ")
            )
        }
    }
}

fn default_summary(outcomes: &[ToolOutcome<'_>]) -> String {
    let mut text = String::from("Here is what the tools returned:");
    for o in outcomes {
        let content = super::truncate(o.content.trim(), 500);
        if o.is_error {
            text.push_str(&format!("\n- {} did not succeed: {content}", o.name));
        } else {
            text.push_str(&format!("\n- {}: {content}", o.name));
        }
    }
    text
}

/// Whether `needle` (lowercase) occurs in `haystack` as whole words.
fn contains_word(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let hay = haystack.to_lowercase();
    let is_word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    hay.match_indices(needle)
        .any(|(at, _)| !is_word(hay[..at].chars().next_back()) && !is_word(hay[at + needle.len()..].chars().next()))
}

/// The contents of a JSON string literal for `text`, without the quotes.
fn json_escape(text: &str) -> String {
    let quoted = serde_json::Value::String(text.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// The word after `word` in `message`, without surrounding punctuation.
fn word_after(message: &str, word: &str) -> Option<String> {
    let words: Vec<&str> = message.split_whitespace().collect();
    let strip = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
    words
        .windows(2)
        .find(|pair| strip(pair[0]).eq_ignore_ascii_case(word))
        .map(|pair| strip(pair[1]))
        .filter(|w| !w.is_empty())
}

/// Fills a template; `None` when a placeholder has no value in the message.
fn render(template: &str, message: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let placeholder = after.find('}').map(|close| (&after[..close], close));
        let value = match placeholder {
            Some(("message", _)) => Some(json_escape(message)),
            Some(("number", _)) => Some(first_number(message)?),
            Some((p, _)) if p.starts_with("after:") => Some(json_escape(&word_after(message, &p["after:".len()..])?)),
            _ => None,
        };
        match (value, placeholder) {
            (Some(value), Some((_, close))) => {
                out.push_str(&value);
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

fn first_number(message: &str) -> Option<String> {
    let start = message.find(|c: char| c.is_ascii_digit())?;
    let digits: String = message[start..].chars().take_while(char::is_ascii_digit).collect();
    Some(digits)
}

impl Provider for RuleProvider {
    identity_accessors!();

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        tokens: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let mut response = self.decide(request);
            assign_ids(&mut response, &self.next_id);
            stream_in_fragments(&response.content, tokens);
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_placeholders_and_keep_other_braces() {
        let m = "Show patient 42 in \"ward\" B";
        assert_eq!(render(r#"{"id": {number}}"#, m).unwrap(), r#"{"id": 42}"#);
        assert_eq!(render(r#"{"q": "{message}"}"#, m).unwrap(), r#"{"q": "Show patient 42 in \"ward\" B"}"#);
        assert_eq!(render(r#"{"where": "{after:in}"}"#, m).unwrap(), r#"{"where": "ward"}"#);
        assert_eq!(render("{}", m).unwrap(), "{}");
        assert_eq!(render(r#"{"id": {number}}"#, "no digits"), None);
        assert_eq!(render(r#"{"c": "{after:in}"}"#, "weather"), None);
    }

    #[test]
    fn keywords_match_whole_words_only() {
        assert!(contains_word("What's the Weather?", "weather"));
        assert!(contains_word("book a room now", "book a room"));
        assert!(!contains_word("thinking", "in"));
        assert!(!contains_word("anything", ""));
    }

    #[test]
    fn fragments_concatenate_to_the_text() {
        let seen = Mutex::new(Vec::<String>::new());
        let sink = |t: &str| seen.lock().unwrap().push(t.to_string());
        let text = "one two three four five six seven";
        stream_in_fragments(text, &sink);
        let seen = seen.into_inner().unwrap();
        assert!(seen.len() > 1 && seen.len() <= 4, "{seen:?}");
        assert_eq!(seen.concat(), text);
    }
}
