//! Waiting inside the run loop: a lock that stays usable after a panic, and a future raced
//! against another or against the run's cancellation.

use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// The lock's guard, also when a thread panicked while holding it (the runtime's maps stay
/// usable: every update to them is a single insert or remove).
pub(in crate::run) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The output of whichever of `a` and `b` finishes first; `a` is polled first, so it wins
/// when both are ready.
pub(in crate::run) async fn first_of<T>(a: impl Future<Output = T>, b: impl Future<Output = T>) -> T {
    let (mut a, mut b) = (std::pin::pin!(a), std::pin::pin!(b));
    std::future::poll_fn(move |cx| match a.as_mut().poll(cx) {
        std::task::Poll::Ready(v) => std::task::Poll::Ready(v),
        std::task::Poll::Pending => b.as_mut().poll(cx),
    })
    .await
}

/// `future`'s output, or `None` once `cancel` is cancelled. The cancellation is looked at
/// first, so a run cancelled as an answer arrives does nothing with it (tokio-util's
/// `run_until_cancelled` favours the answer).
pub(in crate::run) async fn unless_cancelled<T>(
    cancel: &CancellationToken,
    future: impl Future<Output = T>,
) -> Option<T> {
    first_of(
        async {
            cancel.cancelled().await;
            None
        },
        async { Some(future.await) },
    )
    .await
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
