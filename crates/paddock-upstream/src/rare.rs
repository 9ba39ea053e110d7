//! Boxing the future of a rarely taken branch where it is built, not in the poll function of
//! the future that awaits it.
//!
//! `Box::pin(rare_call(args)).await` keeps the rare branch's state out of the caller's future,
//! but the unstarted future is still built as a value in the caller's poll function and then
//! moved into the box: that function's stack frame reserves the rare future's whole size
//! (tens of KB for the admin API, the RBAC follow-ups or a replay to other clusters), and every
//! poll of every request through it probes those pages (docs/performance/sessions-11-13.md
//! has the sizes).
//! [`boxed`] builds it in a frame of its own, entered only when the branch is taken.

use std::future::Future;
use std::pin::Pin;

/// `Box::pin(make())`, built outside the caller's stack frame.
#[inline(never)]
pub fn boxed<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::pin(make())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_boxed_future_runs_once_awaited() {
        let mut ran = false;
        let out = boxed(|| async {
            ran = true;
            7
        })
        .await;
        assert_eq!(out, 7);
        assert!(ran);
    }
}
