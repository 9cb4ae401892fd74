//! Reading an OpenAI Chat Completions answer: a stream of `chat.completion.chunk` events
//! ending in `[DONE]`, or one `chat.completion` from a server that ignores `stream`. Tool-call
//! arguments are reassembled from their fragments by index.

use super::reader::{Answer, DecodedAnswer, WireCtx, WireState, parse_json, token_count};
use super::sse::{Flow, SseEvent};
use crate::http;
use crate::{ProviderError, ToolCallRequest};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The OpenAI reader: text, tool calls reassembled from their fragments, usage.
#[derive(Debug, Default)]
pub(crate) struct ChatCompletionsStream {
    answer: Answer,
    /// The server's call index → the call's position in `answer.calls`.
    slots: BTreeMap<u64, usize>,
    finished: bool,
}

impl WireState for ChatCompletionsStream {
    fn event(&mut self, event: &SseEvent, cx: &WireCtx<'_>) -> Result<Flow, ProviderError> {
        if event.data.trim() == "[DONE]" {
            return Ok(Flow::Stop);
        }
        let chunk = parse_json(&event.data, cx)?;
        self.apply_chunk(&chunk, cx)?;
        Ok(Flow::Continue)
    }

    /// A whole (non-streamed) `chat.completion`, from servers that ignore `stream`.
    fn whole(&mut self, whole: &Value, cx: &WireCtx<'_>) -> Result<(), ProviderError> {
        if let Some(error) = whole.get("error") {
            return Err(in_answer_error(error, cx));
        }
        let message = whole
            .pointer("/choices/0/message")
            .ok_or_else(|| ProviderError::Protocol("the answer has no choices[0].message".into()))?;
        if let Some(text) = message.get("content").and_then(Value::as_str) {
            self.answer.text(text, cx)?;
        }
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            for (i, call) in calls.iter().enumerate() {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
                self.apply_tool_fragment(call, Some(index), cx)?;
            }
        }
        self.read_usage(whole);
        self.finished = true;
        Ok(())
    }

    fn incomplete(&self) -> Option<&'static str> {
        (!self.finished).then_some("no finish_reason and no [DONE]")
    }

    fn into_answer(self) -> DecodedAnswer {
        let Answer { content, calls, input_tokens, output_tokens, .. } = self.answer;
        let tool_calls = calls
            .into_iter()
            .enumerate()
            .map(|(index, acc)| ToolCallRequest {
                id: if acc.id.is_empty() { format!("call_{index}") } else { acc.id },
                name: acc.name,
                arguments: if acc.arguments.trim().is_empty() { "{}".into() } else { acc.arguments },
            })
            .collect();
        DecodedAnswer { content, tool_calls, input_tokens, output_tokens }
    }
}

/// An `error` object inside an answer or a stream, after a 200.
fn in_answer_error(error: &Value, cx: &WireCtx<'_>) -> ProviderError {
    let message = http::error_message(&json!({ "error": error }).to_string());
    ProviderError::Other(format!("the provider reported an error in the stream: {}", cx.redactor.quote(&message, 300)))
}

impl ChatCompletionsStream {
    /// Applies one `chat.completion.chunk`.
    fn apply_chunk(&mut self, chunk: &Value, cx: &WireCtx<'_>) -> Result<(), ProviderError> {
        if let Some(error) = chunk.get("error") {
            return Err(in_answer_error(error, cx));
        }
        if let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first()) {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                self.answer.text(text, cx)?;
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for call in calls {
                    self.apply_tool_fragment(call, call.get("index").and_then(Value::as_u64), cx)?;
                }
            }
            if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
                self.finished = true;
            }
        }
        self.read_usage(chunk);
        Ok(())
    }

    fn apply_tool_fragment(&mut self, call: &Value, index: Option<u64>, cx: &WireCtx<'_>) -> Result<(), ProviderError> {
        let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        // The raw index keys the fragments; a server that omits it continues the last call.
        // A new id under an index already in use opens a new call (Ollama numbers every call
        // of a parallel batch 0).
        let raw = index.or_else(|| self.slots.keys().copied().max()).unwrap_or(0);
        let calls = &self.answer.calls;
        let slot = match self.slots.get(&raw) {
            Some(&slot) if id.is_none_or(|id| calls[slot].id.is_empty() || calls[slot].id == id) => slot,
            _ => {
                let slot = self.answer.open_call(cx)?;
                self.slots.insert(raw, slot);
                slot
            }
        };
        if let Some(id) = id {
            self.answer.calls[slot].id = Answer::field(id, cx)?;
        }
        let function = call.get("function").unwrap_or(&Value::Null);
        if let Some(name) = function.get("name").and_then(Value::as_str)
            && !name.is_empty()
        {
            self.answer.calls[slot].name = Answer::field(name, cx)?;
        }
        if let Some(args) = function.get("arguments").and_then(Value::as_str) {
            self.answer.arguments(slot, args, cx)?;
        }
        Ok(())
    }

    /// Reads `usage` when present: a count that is missing, of the wrong type or negative
    /// stays unread (the provider then estimates it and warns).
    fn read_usage(&mut self, v: &Value) {
        if let Some(usage) = v.get("usage").filter(|u| !u.is_null()) {
            self.answer.input_tokens = token_count(usage.get("prompt_tokens"));
            self.answer.output_tokens = token_count(usage.get("completion_tokens"));
        }
    }
}
