//! Stream-parsing throughput of a provider's answer with the [`ProviderLimits`] on, against
//! the same reader without them ([`ProviderLimits::unlimited`]), measured in one run.
//!
//! The answers are 1 MB event streams of each wire format (text fragments of a few words and
//! the streamed arguments of two tool calls), cut into 16 KiB chunks as a socket delivers
//! them, and read by [`WireFormat::decode`], the reader the providers use. The two variants
//! are timed in interleaved rounds (limited, unlimited, limited, ...) so that a change in
//! machine load affects both alike; the medians and their ratio (limited / unlimited
//! throughput) are printed. Run with `cargo bench -p agents-runtime --bench provider_stream`.

use agents_runtime::provider::{ProviderLimits, WireFormat};
use std::hint::black_box;
use std::time::{Duration, Instant};

const ANSWER_BYTES: usize = 1_000_000;
const CHUNK: usize = 16 * 1024;
const ROUNDS: usize = 31;

fn openai_stream() -> Vec<u8> {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < ANSWER_BYTES {
        let event = match i % 10 {
            8 => format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{},\"function\":{{\"arguments\":\"{{\\\"part\\\":{i},\"}}}}]}},\"finish_reason\":null}}]}}\n\n",
                i % 2
            ),
            _ => format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" word{i} and more\"}},\"finish_reason\":null}}]}}\n\n"
            ),
        };
        out.push_str(&event);
        i += 1;
    }
    out.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    out.push_str(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":20000}}\n\ndata: [DONE]\n\n",
    );
    out.into_bytes()
}

fn anthropic_stream() -> Vec<u8> {
    let mut out = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":100,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}}\n\n",
    );
    let mut i = 0;
    while out.len() < ANSWER_BYTES {
        let event = match i % 10 {
            8 => format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{{\\\"part\\\":{i},\"}}}}\n\n"
            ),
            _ => format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\" word{i} and more\"}}}}\n\n"
            ),
        };
        out.push_str(&event);
        i += 1;
    }
    out.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20000}}\n\n");
    out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out.into_bytes()
}

fn time_one(format: WireFormat, stream: &[u8], limits: &ProviderLimits) -> Duration {
    let started = Instant::now();
    let answer = format.decode(true, stream.chunks(CHUNK), limits).expect("the benchmark answer is valid");
    black_box(answer);
    started.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let on = ProviderLimits::default();
    let off = ProviderLimits::unlimited();
    println!("stream parsing of a 1 MB answer in {} KiB chunks, median of {ROUNDS} interleaved rounds", CHUNK / 1024);
    for (name, format, stream) in
        [("openai", WireFormat::OpenAi, openai_stream()), ("anthropic", WireFormat::Anthropic, anthropic_stream())]
    {
        // Both variants read the same answer to the same result.
        assert_eq!(format.decode(true, stream.chunks(CHUNK), &on), format.decode(true, stream.chunks(CHUNK), &off));
        for _ in 0..3 {
            time_one(format, &stream, &on);
            time_one(format, &stream, &off);
        }
        let (mut limited, mut unlimited) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            limited.push(time_one(format, &stream, &on));
            unlimited.push(time_one(format, &stream, &off));
        }
        let mb = stream.len() as f64 / 1e6;
        let (l, u) = (median(limited), median(unlimited));
        let (l_tp, u_tp) = (mb / l.as_secs_f64(), mb / u.as_secs_f64());
        println!(
            "{name:>9}: {:.2} MB, limits on {l_tp:8.1} MB/s ({l:?}), limits off {u_tp:8.1} MB/s ({u:?}), ratio on/off {:.3}",
            mb,
            l_tp / u_tp
        );
    }
}
