//! Which serving thread the caller runs on, in the per-core serving mode (`paddock serve
//! --serve-threads N`, docs/architecture.md "Per-core serving").
//!
//! In that mode each of N OS threads runs a tokio `current_thread` runtime of its own and
//! serves the client connections handed to it, with all their streams. A thread marks itself
//! with [`enter`] when it starts; `short_set::ShortSet` then gives it connections of
//! its own, dialled from (and so driven on) that thread, so that a small request and its
//! upstream stream are handled by one thread with no cross-thread wake-up. Every other thread
//! (the multi-thread runtime's workers) is unmarked and shares one set.

use std::cell::Cell;

/// Most serving threads: the per-thread connection sets are indexed by the thread's number.
pub const MAX_SERVING_THREADS: usize = 256;

thread_local! {
    static SERVING: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Marks the calling thread as serving thread `index` (below [`MAX_SERVING_THREADS`]; a
/// larger index is ignored and the thread shares the common set).
pub fn enter(index: usize) {
    if index < MAX_SERVING_THREADS {
        SERVING.with(|s| s.set(Some(index)));
    }
}

/// The calling thread's serving index, if it is a serving thread.
pub fn current() -> Option<usize> {
    SERVING.with(Cell::get)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn marked_per_thread() {
        let marked = std::thread::spawn(|| {
            enter(3);
            current()
        })
        .join()
        .unwrap();
        assert_eq!(marked, Some(3));
        let too_big = std::thread::spawn(|| {
            enter(MAX_SERVING_THREADS);
            current()
        })
        .join()
        .unwrap();
        assert_eq!(too_big, None);
        assert_eq!(std::thread::spawn(current).join().unwrap(), None);
    }
}
