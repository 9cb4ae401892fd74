//! Reading an Anthropic Messages answer: the `message_start` … `message_stop` events, or one
//! `message` from a gateway that ignores `stream`. Text blocks and `tool_use` blocks with
//! their streamed JSON are kept; thinking and server-tool blocks are not part of the answer.

use super::reader::{Answer, DecodedAnswer, WireCtx, WireState, parse_json, token_count};
use super::sse::{Flow, SseEvent};
use crate::{ProviderError, ToolCallRequest};
use serde_json::Value;
use std::collections::BTreeMap;

/// A `tool_use` block being read: its position among the answer's calls, and the `input`
/// it started with (used when no `input_json_delta` follows).
#[derive(Debug)]
struct ToolBlock {
    slot: usize,
    initial: Option<String>,
}

/// The Anthropic reader: text blocks, `tool_use` blocks with their streamed JSON, usage.
/// Only `tool_use` blocks are kept by index, so the map is bounded by the tool-call limit.
#[derive(Debug, Default)]
pub(crate) struct MessagesStream {
    answer: Answer,
    tool_blocks: BTreeMap<u64, ToolBlock>,
    stop_reason: Option<String>,
}

impl WireState for MessagesStream {
    fn event(&mut self, event: &SseEvent, cx: &WireCtx<'_>) -> Result<Flow, ProviderError> {
        let data = parse_json(&event.data, cx)?;
        self.apply_event(&data, cx)
    }

    /// A whole (non-streamed) message, from gateways that ignore `stream`.
    fn whole(&mut self, whole: &Value, cx: &WireCtx<'_>) -> Result<(), ProviderError> {
        if whole.get("type").and_then(Value::as_str) == Some("error") {
            return Err(stream_error(whole, cx));
        }
        let content = whole
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| ProviderError::Protocol("the answer has no content array".into()))?;
        for (i, block) in content.iter().enumerate() {
            self.open_block(i as u64, block, cx)?;
        }
        if let Some(usage) = whole.get("usage") {
            self.read_usage(usage, false);
        }
        self.stop_reason = Some(str_field(whole, "stop_reason"));
        Ok(())
    }

    fn incomplete(&self) -> Option<&'static str> {
        self.stop_reason.is_none().then_some("no message_stop")
    }

    fn into_answer(mut self) -> DecodedAnswer {
        for block in std::mem::take(&mut self.tool_blocks).into_values() {
            settle(&mut self.answer, block);
        }
        let Answer { content, calls, input_tokens, output_tokens, .. } = self.answer;
        let tool_calls = calls
            .into_iter()
            .map(|acc| ToolCallRequest { id: acc.id, name: acc.name, arguments: acc.arguments })
            .collect();
        DecodedAnswer { content, tool_calls, input_tokens, output_tokens }
    }
}

impl MessagesStream {
    /// Reads a `usage` object. `input_tokens` is the sum of the plain and the cached input
    /// counts (saturating: no count a server sends can overflow). In a `message_delta`
    /// (`update`), a count the event leaves out keeps its earlier value.
    fn read_usage(&mut self, usage: &Value, update: bool) {
        let input = token_count(usage.get("input_tokens"));
        let cached = ["cache_creation_input_tokens", "cache_read_input_tokens"]
            .iter()
            .map(|k| match usage.get(*k) {
                None | Some(Value::Null) => Some(0),
                present => token_count(present),
            })
            .try_fold(0u64, |sum, n| n.map(|n| sum.saturating_add(n)));
        let input = input.and_then(|i| cached.map(|c| i.saturating_add(c)));
        let output = token_count(usage.get("output_tokens"));
        if update {
            self.answer.input_tokens = merge(self.answer.input_tokens, usage.get("input_tokens").is_some(), input);
            self.answer.output_tokens = merge(self.answer.output_tokens, usage.get("output_tokens").is_some(), output);
        } else {
            self.answer.input_tokens = input;
            self.answer.output_tokens = output;
        }
    }

    fn open_block(&mut self, index: u64, block: &Value, cx: &WireCtx<'_>) -> Result<(), ProviderError> {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                self.answer.text(text, cx)?;
            }
            Some("tool_use") => {
                let slot = self.answer.open_call(cx)?;
                self.answer.calls[slot].id = Answer::field(&str_field(block, "id"), cx)?;
                self.answer.calls[slot].name = Answer::field(&str_field(block, "name"), cx)?;
                let initial = match block.get("input") {
                    Some(input) if input.is_object() => {
                        let text = input.to_string();
                        self.answer.count_arguments(text.len(), cx)?;
                        Some(text)
                    }
                    _ => None,
                };
                if let Some(old) = self.tool_blocks.insert(index, ToolBlock { slot, initial }) {
                    settle(&mut self.answer, old);
                }
            }
            // thinking, redacted_thinking, server tools: not part of the answer.
            _ => {
                if let Some(old) = self.tool_blocks.remove(&index) {
                    settle(&mut self.answer, old);
                }
            }
        }
        Ok(())
    }

    fn apply_event(&mut self, event: &Value, cx: &WireCtx<'_>) -> Result<Flow, ProviderError> {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    self.read_usage(usage, false);
                }
            }
            "content_block_start" => {
                self.open_block(index, event.get("content_block").unwrap_or(&Value::Null), cx)?;
            }
            "content_block_delta" => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        self.answer.text(text, cx)?;
                    }
                    Some("input_json_delta") => {
                        let part = delta.get("partial_json").and_then(Value::as_str).unwrap_or("");
                        match self.tool_blocks.get(&index) {
                            Some(block) => self.answer.arguments(block.slot, part, cx)?,
                            None => {
                                return Err(ProviderError::Protocol(format!(
                                    "input_json_delta for block {index}, which is not a \
                                     tool_use block"
                                )));
                            }
                        }
                    }
                    // thinking, signatures, citations: not part of the answer.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(cx.redactor.quote(reason, 100));
                }
                if let Some(usage) = event.get("usage") {
                    self.read_usage(usage, true);
                }
            }
            "message_stop" => return Ok(Flow::Stop),
            "error" => return Err(stream_error(event, cx)),
            // ping, content_block_stop and event types added later.
            _ => {}
        }
        Ok(Flow::Continue)
    }
}

/// A `tool_use` block's arguments once no more deltas can come: the streamed JSON, else the
/// `input` it started with, else `{}`.
fn settle(answer: &mut Answer, block: ToolBlock) {
    if let Some(call) = answer.calls.get_mut(block.slot)
        && call.arguments.trim().is_empty()
    {
        call.arguments = block.initial.unwrap_or_else(|| "{}".into());
    }
}

/// A `message_delta` count: unchanged when the event leaves it out, unreadable when the event
/// has it unreadable, else the larger of the two.
fn merge(previous: Option<u64>, present: bool, new: Option<u64>) -> Option<u64> {
    if !present {
        return previous;
    }
    match (previous, new) {
        (Some(p), Some(n)) => Some(p.max(n)),
        (_, n) => n,
    }
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// An `error` event inside a stream (after a 200), or an error object as the whole answer:
/// overloaded and server errors keep their HTTP meaning; the call is not retried because
/// tokens may already have been shown. Every error type's text is redacted.
fn stream_error(event: &Value, cx: &WireCtx<'_>) -> ProviderError {
    let kind = event.pointer("/error/type").and_then(Value::as_str).unwrap_or("error");
    let message = event.pointer("/error/message").and_then(Value::as_str).unwrap_or("no details");
    let status = match kind {
        "overloaded_error" => Some(529),
        "api_error" => Some(500),
        "rate_limit_error" => Some(429),
        _ => None,
    };
    let (kind, message) = (cx.redactor.quote(kind, 100), cx.redactor.quote(message, 300));
    match status {
        Some(status) => ProviderError::Upstream {
            status,
            attempts: cx.attempts,
            detail: format!("{kind} in the stream: {message}"),
        },
        None => ProviderError::Other(format!("the provider reported an error in the stream ({kind}): {message}")),
    }
}
