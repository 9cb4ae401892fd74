//! A tool's own run, contained: a panic, a tool that does not finish within the per-call
//! deadline, and a stop of the run all end the call with a `failed` record instead of
//! ending (or holding) the run; and a result larger than the runtime's bound is cut before
//! the model, the events or the audit log see it.

use crate::run::conversation::json_prefix;
use crate::run::decision::Undecided;
use crate::run::scope::Run;
use crate::run::sync::unless_cancelled;
use crate::tool::{CallContext, ErasedArgs, ToolError, ToolFuture};
use serde_json::{Value, json};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What the model and the record are told when a tool panicked. The panic's own text is
/// withheld everywhere but the process's panic hook: it may quote the call's arguments.
pub(in crate::run) const PANICKED: &str =
    "panicked: the tool failed unexpectedly and its message is withheld; its outcome is unknown";

/// Runs the handler `run` on `cx`: its result, or a [`ToolError`] saying why it ended without
/// one (a panic, the deadline, a stop).
///
/// A stopped run starts no tool. The tool is polled once at once: a call that finishes in
/// that first poll (most read tools) needs neither a timer nor a watch on the run's stop, so
/// none is set up; one that does not is then raced against the deadline, counted from before
/// that first poll, and the stop, as before. A panic in any poll is caught either way.
pub(in crate::run) async fn run_contained<R: Run>(
    ctx: &R,
    run: for<'c> fn(&'c CallContext, ErasedArgs) -> ToolFuture<'c>,
    cx: &CallContext,
    typed: ErasedArgs,
) -> Result<Value, ToolError> {
    if cx.spec.import.is_some() {
        // An imported tool refused for a changed pin says, for its record, what the server
        // gives now (the tool's error reaches here as text only).
        return await_in_place!(contained(ctx, run, cx, typed)).map_err(|mut e| {
            e.listed_sha256 = cx.listed_sha256.get().cloned();
            e
        });
    }
    await_in_place!(contained(ctx, run, cx, typed))
}

async fn contained<R: Run>(
    ctx: &R,
    run: for<'c> fn(&'c CallContext, ErasedArgs) -> ToolFuture<'c>,
    cx: &CallContext,
    typed: ErasedArgs,
) -> Result<Value, ToolError> {
    if ctx.cancel().is_cancelled() {
        return Err(stopped(ctx));
    }
    if cx.spec.policy.isolated || ctx.services().isolation.as_ref().is_some_and(|i| i.adds(cx.spec.name)) {
        // Boxed: the worker's pipes and timers are not kept in every call's future.
        return Box::pin(run_isolated(ctx, cx, typed)).await;
    }
    let started = tokio::time::Instant::now();
    let mut call = match catch_unwind(AssertUnwindSafe(|| run(cx, typed))) {
        Ok(call) => call,
        Err(_) => return Err(ToolError::new(PANICKED)),
    };
    let mut poll = move |task: &mut std::task::Context<'_>| match catch_unwind(AssertUnwindSafe(|| {
        std::pin::Pin::new(&mut call).poll(task)
    })) {
        Ok(poll) => poll,
        Err(_) => std::task::Poll::Ready(Err(ToolError::new(PANICKED))),
    };
    let first = std::future::poll_fn(|task| std::task::Poll::Ready(poll(task))).await;
    if let std::task::Poll::Ready(result) = first {
        return result;
    }
    let polled = std::future::poll_fn(poll);
    let deadline = ctx.settings().tool_timeout;
    let left = deadline.saturating_sub(started.elapsed());
    // Boxed: the timer and the watch on the stop are only for a tool that did not finish in
    // its first poll, and are not kept in the future of every call.
    match Box::pin(unless_cancelled(ctx.cancel(), tokio::time::timeout(left, polled))).await {
        Some(Ok(result)) => result,
        Some(Err(_)) => Err(ToolError::new(format!(
            "{}: the tool did not finish within {} s and was ended; its outcome is unknown",
            Undecided::TimedOut.code(),
            deadline.as_secs_f64()
        ))),
        None => Err(stopped(ctx)),
    }
}

/// What a call that a stop of its run ended is told.
fn stopped<R: Run>(ctx: &R) -> ToolError {
    let why = ctx.stop_reason().unwrap_or(Undecided::Stopped);
    ToolError::new(format!(
        "{}: the run was stopped while the tool ran; it was ended and its outcome is unknown",
        why.code()
    ))
}

/// An isolated tool's call, carried out by a confined worker process ([`crate::isolate`]) under
/// the per-call deadline; how the worker ended is audited as a notice before the call's own
/// `executed` or `failed` record. A stop of the run drops the call, which kills the worker.
async fn run_isolated<R: Run>(ctx: &R, cx: &CallContext, typed: ErasedArgs) -> Result<Value, ToolError> {
    let call = crate::isolate::call(ctx.services().isolation.as_ref(), cx, typed, ctx.settings().tool_timeout);
    let Some((result, ended)) = unless_cancelled(ctx.cancel(), call).await else {
        let why = ctx.stop_reason().unwrap_or(Undecided::Stopped);
        return Err(ToolError::new(format!(
            "{}: the run was stopped while the isolated tool ran; its worker process was killed and its outcome is unknown",
            why.code()
        )));
    };
    let notice = crate::run::record::RecordFields {
        call_id: Some(cx.call_id.clone()),
        tool: Some(cx.spec.name.into()),
        tier: Some(cx.spec.tier),
        ..crate::run::record::RecordFields::new(crate::audit::AuditStatus::Notice).reason(ended)
    };
    let _ = ctx.recorder().audit(notice).await;
    result
}

/// `value` when its compact JSON text fits `max` bytes; otherwise a notice that it was cut,
/// with the start of the text, and the reason the `executed` record carries.
pub(in crate::run) fn bounded(value: Value, max: usize) -> (Value, Option<String>) {
    let size = json_size(&value);
    if size <= max {
        return (value, None);
    }
    // The kept start: at most `max` bytes of text (a character takes up to four).
    let mut kept = json_prefix(&value, max);
    while kept.len() > max {
        kept.pop();
    }
    let notice = format!("the result was cut: {size} bytes of JSON, more than the {max} bytes a result may have");
    (json!({"truncated": true, "notice": notice, "start": kept}), Some(notice))
}

/// What the model reads of a tool message whose text is `text`: the text itself when it is at
/// most `max` bytes long; otherwise its first `max` bytes (cut on a character boundary) and a
/// notice that says how much was cut and that the rest is not visible to the model.
pub(in crate::run) fn model_view(mut text: String, max: usize) -> String {
    let size = text.len();
    if size <= max {
        return text;
    }
    let mut kept = max;
    while !text.is_char_boundary(kept) {
        kept -= 1;
    }
    text.truncate(kept);
    text.push_str("\n\n");
    text.push_str(&model_cut_notice(size, kept));
    text
}

/// The notice the model reads after a tool message cut to its first `kept` of `size` bytes.
pub(in crate::run) fn model_cut_notice(size: usize, kept: usize) -> String {
    format!(
        "[notice from the runtime: this tool result is {size} bytes long; only its first {kept} bytes are shown \
         above, and the other {} bytes were cut and are not visible to you. Do not guess what they hold; say \
         that the result was too long to read whole, or ask for a narrower one.]",
        size - kept
    )
}

/// The reason an `executed` record adds when the model reads only the start of its result.
pub(in crate::run) fn model_cut_reason(size: usize, max: usize) -> String {
    format!(
        "the model was shown only the first {max} of the result's {size} bytes; the record's digest covers the whole \
         result"
    )
}

/// The length in bytes of a value's compact JSON text, counted without writing it.
pub(in crate::run) fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    let _ = serde_json::to_writer(&mut n, value);
    n.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_within_the_bound_is_kept_and_a_larger_one_is_cut_with_a_notice() {
        let small = json!({"a": "x".repeat(10)});
        assert_eq!(bounded(small.clone(), 100), (small, None));
        let big = json!({"a": "é".repeat(1000)});
        let (cut, notice) = bounded(big.clone(), 100);
        assert!(notice.unwrap().contains(&json_size(&big).to_string()));
        assert_eq!(cut["truncated"], json!(true));
        let start = cut["start"].as_str().unwrap();
        assert!(start.len() <= 100 && big.to_string().starts_with(start), "{start}");
        assert_eq!(json_size(&big), big.to_string().len());
    }

    #[test]
    fn the_model_reads_at_most_the_bound_then_a_notice_of_what_was_cut() {
        assert_eq!(model_view("short".into(), 5), "short");
        let text = "é".repeat(100);
        let seen = model_view(text.clone(), 51);
        let (start, notice) = seen.split_once("\n\n").unwrap();
        assert_eq!(start.len(), 50, "cut on a character boundary, within the bound");
        assert!(text.starts_with(start));
        assert!(notice.contains("200 bytes long") && notice.contains("other 150 bytes"), "{notice}");
        assert!(notice.contains("not visible to you"), "{notice}");
    }
}
