//! Waiting inside the run loop: a lock that stays usable after a panic, and a future raced
//! against another or against the run's cancellation.

use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use tokio_util::sync::CancellationToken;
use tokio_util::sync::WaitForCancellationFuture;

/// The lock's guard, also when a thread panicked while holding it (the runtime's maps stay
/// usable: every update to them is a single insert or remove).
pub(in crate::run) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pin_project_lite::pin_project! {
    /// The output of whichever of two futures finishes first (see [`first_of`]). The futures
    /// are held in place: a future awaiting this one holds each of them once, not a copy
    /// beside it (as an `async fn` taking them would, its arguments kept beside its state).
    pub(in crate::run) struct FirstOf<A, B> {
        #[pin]
        a: A,
        #[pin]
        b: B,
    }
}

impl<T, A: Future<Output = T>, B: Future<Output = T>> Future for FirstOf<A, B> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.project();
        match this.a.poll(cx) {
            Poll::Ready(v) => Poll::Ready(v),
            Poll::Pending => this.b.poll(cx),
        }
    }
}

/// The output of whichever of `a` and `b` finishes first; `a` is polled first, so it wins
/// when both are ready.
pub(in crate::run) fn first_of<T, A: Future<Output = T>, B: Future<Output = T>>(a: A, b: B) -> FirstOf<A, B> {
    FirstOf { a, b }
}

pin_project_lite::pin_project! {
    /// A future's output, or `None` once a token is cancelled (see [`unless_cancelled`]); the
    /// future held in place, as [`FirstOf`] holds its two.
    pub(in crate::run) struct UnlessCancelled<'a, F> {
        #[pin]
        cancelled: WaitForCancellationFuture<'a>,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for UnlessCancelled<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
        let this = self.project();
        if this.cancelled.poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        this.future.poll(cx).map(Some)
    }
}

/// `future`'s output, or `None` once `cancel` is cancelled. The cancellation is looked at
/// first, so a run cancelled as an answer arrives does nothing with it (tokio-util's
/// `run_until_cancelled` favours the answer).
pub(in crate::run) fn unless_cancelled<F: Future>(cancel: &CancellationToken, future: F) -> UnlessCancelled<'_, F> {
    UnlessCancelled { cancelled: cancel.cancelled(), future }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_future_wins_when_both_are_ready_and_either_may_finish_first() {
        let both_ready = first_of(std::future::ready(1), std::future::ready(2));
        assert_eq!(futures::executor::block_on(both_ready), 1);
        let second = first_of(std::future::pending(), std::future::ready(2));
        assert_eq!(futures::executor::block_on(second), 2);
        let first = first_of(std::future::ready(1), std::future::pending());
        assert_eq!(futures::executor::block_on(first), 1);
    }

    #[test]
    fn a_cancelled_token_wins_over_a_ready_answer() {
        let cancel = CancellationToken::new();
        assert_eq!(futures::executor::block_on(unless_cancelled(&cancel, std::future::ready(1))), Some(1));
        cancel.cancel();
        assert_eq!(futures::executor::block_on(unless_cancelled(&cancel, std::future::ready(1))), None);
    }
}
