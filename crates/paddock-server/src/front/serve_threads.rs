//! Per-core serving (`paddock serve --serve-threads N`, one per CPU by default; 0 turns it
//! off): N OS threads, each running a tokio `current_thread` runtime of its own. The accept
//! loop (`front`) hands each accepted connection to the next thread in turn, and the
//! connection with all its streams lives there. Each thread marks itself as a serving thread
//! (`paddock_upstream::serving`), so the short requests it sends go over upstream HTTP/2
//! connections of its own, dialled and driven on the same thread: a small GET's front
//! stream, its upstream stream and both connections' socket work happen in one thread's event
//! loop, with no wake-up of another worker, no futex and no context switch between them (on
//! the multi-thread runtime, the idle and wake-up path is a large share of a small GET's CPU;
//! docs/performance/sessions-11-13.md has the figures).
//!
//! Everything else stays on the main multi-thread runtime: background loops, reconcilers,
//! the fair queue's pacer, and the streams that are not answered small
//! (lists, watches, logs, discovery; `front_streams::answers_small`): those are spawned on
//! the main runtime ([`spawn_heavy`]), where a large answer is translated on whichever core
//! is free and the list and watch pools' connections are made and driven.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

use paddock_upstream::error::ServerError;

/// How long a serving thread's runtime waits for its blocking tasks when it is shut down
/// (its connections' tasks are dropped at once; the drain happened before).
const STOP_TIMEOUT: Duration = Duration::from_millis(500);

thread_local! {
    /// On a serving thread: the main runtime, where heavy streams are spawned.
    static MAIN: RefCell<Option<Handle>> = const { RefCell::new(None) };
}

/// Spawns `fut` on the main runtime when called on a serving thread, else on the current
/// runtime (`tokio::spawn`).
pub fn spawn_heavy<F>(fut: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let main = MAIN.with(|m| m.borrow().clone());
    match main {
        Some(h) => drop(h.spawn(fut)),
        None => drop(tokio::spawn(fut)),
    }
}

/// The serving threads.
pub struct ServeThreads {
    threads: Vec<ServeThread>,
    next: usize,
}

struct ServeThread {
    handle: Handle,
    stop: oneshot::Sender<()>,
    stopped: oneshot::Receiver<()>,
}

impl ServeThreads {
    /// Starts `n` serving threads (numbered from 0, `paddock-serve-<i>`); `main` is the
    /// runtime that heavy streams are spawned on.
    pub fn start(n: usize, main: Handle) -> Result<Self, ServerError> {
        let mut threads = Vec::with_capacity(n);
        for index in 0..n {
            // Built here, run there: a runtime may be built on any thread.
            let rt = Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| ServerError::Config(format!("serve_threads: runtime: {e}")))?;
            let handle = rt.handle().clone();
            let (stop, stop_rx) = oneshot::channel::<()>();
            let (stopped_tx, stopped) = oneshot::channel::<()>();
            let main = main.clone();
            std::thread::Builder::new()
                .name(format!("paddock-serve-{index}"))
                .spawn(move || {
                    paddock_upstream::serving::enter(index);
                    MAIN.with(|m| *m.borrow_mut() = Some(main));
                    // The thread's tasks run while this waits (a current_thread runtime runs
                    // its tasks only inside `block_on`).
                    rt.block_on(async {
                        let _ = stop_rx.await;
                    });
                    rt.shutdown_timeout(STOP_TIMEOUT);
                    let _ = stopped_tx.send(());
                })
                .map_err(|e| ServerError::Config(format!("serve_threads: thread: {e}")))?;
            threads.push(ServeThread {
                handle,
                stop,
                stopped,
            });
        }
        tracing::info!(
            threads = n,
            "per-core serving: connections are served on their own threads"
        );
        Ok(ServeThreads { threads, next: 0 })
    }

    /// How many serving threads there are.
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// Runs `fut` (one connection) on the next serving thread, round robin.
    pub fn spawn<F>(&mut self, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if self.threads.is_empty() {
            drop(tokio::spawn(fut));
            return;
        }
        let t = &self.threads[self.next % self.threads.len()];
        self.next = self.next.wrapping_add(1);
        drop(t.handle.spawn(fut));
    }

    /// Ends the threads: their runtimes drop what is still running (call after the drain).
    /// Waits at most `patience` for them to have stopped (false if they did not); never blocks
    /// the caller's thread.
    pub async fn stop(self, patience: Duration) -> bool {
        let mut stopped = Vec::with_capacity(self.threads.len());
        for t in self.threads {
            let _ = t.stop.send(());
            stopped.push(t.stopped);
        }
        let all = async {
            for s in stopped {
                let _ = s.await;
            }
        };
        let in_time = tokio::time::timeout(patience, all).await.is_ok();
        if !in_time {
            tracing::warn!("serving threads did not stop in time; leaving them to the exit");
        }
        in_time
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::{Arc, Mutex};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn round_robin_over_threads_marked_for_the_upstream_sets() {
        let mut threads = ServeThreads::start(2, Handle::current()).unwrap();
        assert_eq!(threads.len(), 2);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut done = Vec::new();
        for _ in 0..4 {
            let seen = seen.clone();
            let (tx, rx) = oneshot::channel();
            threads.spawn(async move {
                let name = std::thread::current().name().map(str::to_owned);
                seen.lock()
                    .unwrap()
                    .push((name, paddock_upstream::serving::current()));
                let _ = tx.send(());
            });
            done.push(rx);
        }
        for rx in done {
            rx.await.unwrap();
        }
        let seen = seen.lock().unwrap().clone();
        let expect = |i: usize| (Some(format!("paddock-serve-{i}")), Some(i));
        assert_eq!(seen.len(), 4);
        for i in 0..2 {
            assert_eq!(
                seen.iter().filter(|s| **s == expect(i)).count(),
                2,
                "{seen:?}"
            );
        }
        assert!(threads.stop(Duration::from_secs(5)).await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn heavy_work_leaves_a_serving_thread_for_the_main_runtime() {
        let mut threads = ServeThreads::start(1, Handle::current()).unwrap();
        let (tx, rx) = oneshot::channel();
        threads.spawn(async move {
            spawn_heavy(async move {
                let _ = tx.send((
                    std::thread::current().name().map(str::to_owned),
                    paddock_upstream::serving::current(),
                ));
            });
        });
        let (name, serving) = rx.await.unwrap();
        assert_ne!(name.as_deref(), Some("paddock-serve-0"));
        assert_eq!(serving, None);
        assert!(threads.stop(Duration::from_secs(5)).await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stop_ends_threads_with_work_still_running() {
        let mut threads = ServeThreads::start(2, Handle::current()).unwrap();
        threads.spawn(std::future::pending());
        threads.spawn(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        });
        let in_time = tokio::time::timeout(
            Duration::from_secs(10),
            threads.stop(Duration::from_secs(5)),
        )
        .await
        .expect("stop hung");
        assert!(in_time, "the threads did not stop");
    }
}
