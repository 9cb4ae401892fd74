//! The fuzz target of both wire readers, as a proptest harness that `cargo test` runs for a
//! bounded number of cases: arbitrary bytes, mutations of the committed corpus
//! (`tests/provider_fuzz_corpus/`, tricky answers kept as files) and arbitrary chunkings, fed
//! to the OpenAI and Anthropic readers, streaming and not, under the default limits and under
//! tiny ones. Nothing may panic, and every answer that is read stays within the limits (the
//! reader's memory is bounded by them). A last part sends arbitrary header bytes over a real
//! socket on loopback.
//!
//! More cases: `PROVIDER_FUZZ_CASES=100000 cargo test -p agents-runtime --test suite provider_fuzz::`.
#![cfg(feature = "http")]

use crate::provider_common;

use agents_runtime::provider::{
    DecodedAnswer, OpenAiConfig, OpenAiProvider, Provider, ProviderError, ProviderHttpOptions, ProviderLimits,
    WireFormat,
};
use proptest::prelude::*;
use provider_common::hostile::{Body, Hostile};
use provider_common::*;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/provider_fuzz_corpus")
}

/// The committed seeds; the harness refuses to run without them.
fn corpus() -> &'static [(String, Vec<u8>)] {
    static CORPUS: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = corpus_dir();
        let mut seeds: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("the fuzz corpus {} cannot be read: {e}", dir.display()))
            .map(|entry| {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&path).unwrap())
            })
            .collect();
        seeds.sort();
        assert!(seeds.len() >= 20, "the fuzz corpus in {} has only {} seeds", dir.display(), seeds.len());
        seeds
    })
}

/// Limits small enough that the fuzzer crosses each of them often.
fn tiny() -> ProviderLimits {
    ProviderLimits {
        max_body_bytes: 512,
        max_event_bytes: 96,
        max_text_bytes: 8,
        max_call_arguments_bytes: 12,
        max_answer_arguments_bytes: 16,
        max_tool_calls: 2,
    }
}

/// Decodes `bytes`, cut at `cuts`, and checks that the outcome respects `limits`.
fn check(format: WireFormat, event_stream: bool, bytes: &[u8], cuts: &[usize], limits: &ProviderLimits) {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut chunks = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for p in points {
        chunks.push(&bytes[start..p]);
        start = p;
    }
    chunks.push(&bytes[start..]);
    let result = std::panic::catch_unwind(|| format.decode(event_stream, chunks.iter().copied(), limits));
    let result = result.unwrap_or_else(|_| {
        panic!("{format:?} (stream: {event_stream}) panicked on {:?} cut at {cuts:?}", String::from_utf8_lossy(bytes))
    });
    match result {
        Ok(answer) => assert_within(&answer, limits),
        Err(ProviderError::LimitExceeded { limit, max }) => assert_eq!(max, limits.get(limit)),
        Err(ProviderError::Protocol(_) | ProviderError::Other(_) | ProviderError::Upstream { .. }) => {}
        Err(other) => panic!("{format:?}: an answer cannot produce {other:?}"),
    }
}

fn assert_within(answer: &DecodedAnswer, limits: &ProviderLimits) {
    assert!(answer.content.len() <= limits.max_text_bytes, "text {} > {}", answer.content.len(), limits.max_text_bytes);
    assert!(answer.tool_calls.len() <= limits.max_tool_calls, "{} calls", answer.tool_calls.len());
    let mut total = 0;
    for call in &answer.tool_calls {
        // `{}` stands in for absent arguments.
        if call.arguments != "{}" {
            assert!(call.arguments.len() <= limits.max_call_arguments_bytes, "{call:?}");
            total += call.arguments.len();
        }
        assert!(
            call.id.len() <= limits.max_call_arguments_bytes.max(8)
                && call.name.len() <= limits.max_call_arguments_bytes
        );
    }
    assert!(total <= limits.max_answer_arguments_bytes, "arguments {total}");
}

fn all_ways(bytes: &[u8], cuts: &[usize]) {
    for limits in [ProviderLimits::default(), tiny()] {
        for format in [WireFormat::OpenAi, WireFormat::Anthropic] {
            for event_stream in [true, false] {
                check(format, event_stream, bytes, cuts, &limits);
            }
        }
    }
}

#[test]
fn every_seed_reads_without_panic_in_one_piece_byte_by_byte_and_in_halves() {
    for (_, bytes) in corpus() {
        let every_byte: Vec<usize> = (1..bytes.len()).collect();
        for cuts in [vec![], every_byte, vec![bytes.len() / 2]] {
            all_ways(bytes, &cuts);
        }
    }
}

#[test]
fn the_seeds_mean_what_their_names_say() {
    // A few seeds are well-formed answers: they must decode, or the corpus has rotted and the
    // fuzzer starts from noise.
    let seed = |name: &str| corpus().iter().find(|(n, _)| n == name).map(|(_, b)| b.as_slice()).unwrap();
    let limits = ProviderLimits::default();
    let openai = WireFormat::OpenAi.decode(true, [seed("openai_tools_parallel.sse")], &limits).unwrap();
    assert_eq!(openai.tool_calls.len(), 2);
    assert_eq!(openai.tool_calls[0].arguments, r#"{"city":"Oslo"}"#);
    let text = WireFormat::OpenAi.decode(true, [seed("openai_text.sse")], &limits).unwrap();
    assert_eq!((text.content.as_str(), text.input_tokens, text.output_tokens), ("Hello", Some(20), Some(5)));
    let weird = WireFormat::OpenAi.decode(true, [seed("openai_usage_weird.sse")], &limits).unwrap();
    assert_eq!((weird.input_tokens, weird.output_tokens), (None, None));
    let anthropic = WireFormat::Anthropic.decode(true, [seed("anthropic_tool_use.sse")], &limits).unwrap();
    assert_eq!(anthropic.content, "Let me check");
    assert_eq!(anthropic.tool_calls[0].arguments, r#"{"city": "Oslo"}"#);
    assert_eq!(anthropic.tool_calls[1].arguments, r#"{"a":1}"#);
    assert_eq!((anthropic.input_tokens, anthropic.output_tokens), (Some(15), Some(40)));
    let huge = WireFormat::Anthropic.decode(true, [seed("anthropic_huge_numbers.sse")], &limits).unwrap();
    assert_eq!(huge.input_tokens, None, "a negative cache count makes the input unreadable");
    let whole = WireFormat::Anthropic.decode(false, [seed("anthropic_whole.json")], &limits).unwrap();
    assert_eq!(whole.tool_calls[0].arguments, r#"{"city":"Paris"}"#);
    assert!(WireFormat::OpenAi.decode(false, [seed("deep_nesting.json")], &limits).is_err());
}

/// How many cases each property runs (`PROVIDER_FUZZ_CASES`, default 4000).
fn cases() -> u32 {
    std::env::var("PROVIDER_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(4000)
}

/// Pieces of both wire formats, spliced into inputs so that mutations reach deep states.
const DICTIONARY: &[&str] = &[
    "data: ",
    "event: ",
    "\n\n",
    "\r\n",
    "\r",
    ":",
    "[DONE]",
    "{\"choices\":[{\"index\":0,\"delta\":{",
    "\"content\":\"",
    "\"tool_calls\":[{\"index\":",
    "\"function\":{\"name\":\"f\",\"arguments\":\"",
    "\"finish_reason\":\"stop\"",
    "\"usage\":{\"prompt_tokens\":",
    "{\"type\":\"content_block_start\",\"index\":",
    "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}",
    "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"",
    "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":",
    "{\"type\":\"message_stop\"}",
    "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"",
    "18446744073709551615",
    "-1",
    "1e400",
    "\"}",
    "}]}",
    "\\u0000",
    "\u{feff}",
];

#[derive(Debug, Clone)]
enum Mutation {
    Insert(usize, Vec<u8>),
    Splice(usize, usize),
    Delete(usize, usize),
    Flip(usize, u8),
    Repeat(usize, usize, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8)).prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<usize>(), 0..DICTIONARY.len()).prop_map(|(at, d)| Mutation::Splice(at, d)),
        (any::<usize>(), 1usize..64).prop_map(|(at, n)| Mutation::Delete(at, n)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Flip(at, b)),
        (any::<usize>(), 1usize..32, 1u8..6).prop_map(|(at, n, times)| Mutation::Repeat(at, n, times)),
    ]
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let at = |i: usize| i % (bytes.len() + 1);
        match m {
            Mutation::Insert(i, b) => {
                let i = at(*i);
                bytes.splice(i..i, b.iter().copied());
            }
            Mutation::Splice(i, d) => {
                let i = at(*i);
                bytes.splice(i..i, DICTIONARY[*d].bytes());
            }
            Mutation::Delete(i, n) => {
                let i = at(*i);
                let end = (i + n).min(bytes.len());
                bytes.drain(i..end);
            }
            Mutation::Flip(i, b) => {
                if !bytes.is_empty() {
                    let i = i % bytes.len();
                    bytes[i] ^= b;
                }
            }
            Mutation::Repeat(i, n, times) => {
                let i = at(*i);
                let end = (i + n).min(bytes.len());
                let part = bytes[i..end].to_vec();
                for _ in 0..*times {
                    bytes.splice(end..end, part.iter().copied());
                }
            }
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_seeds_in_any_chunking_never_panic_and_stay_within_the_limits(
        seed in 0usize..1000,
        mutations in proptest::collection::vec(mutation(), 0..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let (_, bytes) = &corpus()[seed % corpus().len()];
        all_ways(&apply(bytes.clone(), &mutations), &cuts);
    }

    #[test]
    fn arbitrary_bytes_in_any_chunking_never_panic_and_stay_within_the_limits(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        all_ways(&bytes, &cuts);
    }
}

/// A status line and header lines of arbitrary bytes, then a valid stream.
fn raw_head() -> impl Strategy<Value = Vec<u8>> {
    let header = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        (
            prop_oneof![
                Just("retry-after".to_string()),
                Just("content-length".to_string()),
                Just("content-type".to_string()),
                Just("transfer-encoding".to_string()),
                Just("location".to_string()),
                "[a-z-]{1,12}",
            ],
            proptest::collection::vec(any::<u8>(), 0..40),
        )
            .prop_map(|(name, value)| {
                let mut line = name.into_bytes();
                line.extend_from_slice(b": ");
                line.extend(value);
                line
            }),
    ];
    (prop_oneof![Just(200u16), Just(429), Just(503), Just(302), 100u16..1000], proptest::collection::vec(header, 0..6))
        .prop_map(|(status, headers)| {
            let mut head = format!("HTTP/1.1 {status} X\r\n").into_bytes();
            for h in headers {
                head.extend(h);
                head.extend_from_slice(b"\r\n");
            }
            head.extend_from_slice(b"connection: close\r\n\r\n");
            head.extend_from_slice(b"data: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
            head
        })
}

#[test]
fn arbitrary_header_bytes_over_a_real_socket_never_panic() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (server, provider) = runtime.block_on(async {
        let server = Hostile::start(Vec::new(), Body::Fixed(Vec::new())).await;
        let http = ProviderHttpOptions { max_attempts: 2, ..fast_http(Duration::from_secs(5)) };
        let config = OpenAiConfig::compatible("m", format!("{}/v1", server.base_url)).with_http(http);
        (server, OpenAiProvider::new(config).unwrap())
    });
    let config =
        ProptestConfig { cases: (cases() / 20).max(32), failure_persistence: None, ..ProptestConfig::default() };
    proptest::test_runner::TestRunner::new(config)
        .run(&raw_head(), |head| {
            server.set(head.clone(), Body::Fixed(Vec::new()));
            let result = runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(10), ask(&provider as &dyn Provider)).await
            });
            prop_assert!(result.is_ok(), "the call did not end for {:?}", String::from_utf8_lossy(&head));
            Ok(())
        })
        .unwrap();
}
