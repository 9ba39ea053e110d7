//! The streams of one front HTTP/2 connection, served inside the connection's own task.
//!
//! hyper's HTTP/2 server hands each new stream (the service's future plus the sending of its
//! response body) to an executor. With tokio's, that is a task per stream: a spawn, and for
//! every frame a stream queues a wake-up of the connection task, often on the other worker
//! thread: hyper's tasks and the context switches between them are then a large share of a
//! small GET's CPU (docs/performance/sessions-07-10.md has the profile). [`StreamExec`]
//! instead queues the stream in the connection's [`Streams`], which the connection task polls
//! beside the connection itself ([`Streams::serve`]): no spawn, no cross-thread wake-up
//! between a stream and its connection, and the frames of every stream that made progress in
//! one pass go out in one flush (fewer TLS records and writes).
//!
//! Each stream still has its own waker (`FuturesUnordered`), so a stream waiting for the
//! upstream, for flow-control window or for a slow client costs nothing while it waits and
//! blocks no other stream; watches and long LISTs keep streaming. What is given up is that the
//! streams served this way on one connection do not run on two cores at once; a busy client
//! spreads over connections, and a stream whose answer may be large or long
//! ([`answers_small`] says no) gets a task of its own ([`StreamExec::spawn_next`]), so that
//! translating it can take another core (docs/performance/sessions-11-13.md). HTTP/1.1 does
//! not use the executor.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use parking_lot::Mutex;

/// One stream's work, as hyper hands it over.
type StreamTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The executor given to hyper for one connection: it queues streams for the connection task,
/// or spawns the stream the service marked as heavy ([`StreamExec::spawn_next`]).
#[derive(Clone, Default)]
pub struct StreamExec {
    queued: Arc<Mutex<Vec<StreamTask>>>,
    spawn_next: Arc<AtomicBool>,
}

impl StreamExec {
    /// The stream being accepted gets a task of its own: hyper creates a stream's service
    /// future (the service's synchronous part runs, and calls this) right before it hands
    /// the stream to the executor, on the same thread. A LIST or a watch translates a large
    /// answer; in a task of its own it runs on another core beside the connection's other
    /// streams (four concurrent 5,000-pod LISTs on one connection were 20 % slower inline).
    pub fn spawn_next(&self) {
        self.spawn_next.store(true, Ordering::Relaxed);
    }
}

impl<F> hyper::rt::Executor<F> for StreamExec
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, fut: F) {
        if self.spawn_next.swap(false, Ordering::Relaxed) {
            // On a per-core serving thread, on the main runtime (`serve_threads`).
            crate::front::serve_threads::spawn_heavy(fut);
            return;
        }
        // hyper calls this only while the connection (or one of its streams) is being polled,
        // that is from inside [`Streams::serve`], which takes the queue after each poll: no
        // wake-up is needed (one would only make the task run again for nothing).
        self.queued.lock().push(Box::pin(fut));
    }
}

/// Whether a request's answer is small and quick to make: everything but a GET, and a GET of
/// one named object (or its `status` or `scale`) without `watch`. The rest (collections,
/// watches, logs, discovery and OpenAPI documents, anything unrecognised) may be large or
/// long and gets a task of its own.
pub fn answers_small(method: &http::Method, path: &str, query: Option<&str>) -> bool {
    if method != http::Method::GET {
        return true;
    }
    let watching = query.is_some_and(|q| {
        q.split('&')
            .any(|kv| kv.starts_with("watch=") && kv != "watch=false" && kv != "watch=0")
    });
    if watching {
        return false;
    }
    let mut segments = path.trim_matches('/').split('/');
    let versions = match segments.next() {
        Some("api") => 1,
        Some("apis") => 2,
        _ => return false,
    };
    let mut parts = [""; 5];
    let mut n = 0;
    for s in segments.skip(versions) {
        if n == parts.len() {
            return false;
        }
        parts[n] = s;
        n += 1;
    }
    let rest = if n >= 3 && parts[0] == "namespaces" {
        &parts[2..n]
    } else {
        &parts[..n]
    };
    match rest {
        [_, _] => true,
        [_, _, sub] => matches!(*sub, "status" | "scale"),
        _ => false,
    }
}

/// The streams being served on one connection.
pub struct Streams {
    exec: StreamExec,
    running: FuturesUnordered<StreamTask>,
}

impl Streams {
    /// An empty set, and the executor that feeds it.
    pub fn new() -> (Self, StreamExec) {
        let exec = StreamExec::default();
        let streams = Streams {
            exec: exec.clone(),
            running: FuturesUnordered::new(),
        };
        (streams, exec)
    }

    /// How many streams are in progress.
    pub fn len(&self) -> usize {
        self.running.len()
    }

    /// Whether no stream is in progress.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Moves what hyper queued into the running set; false if nothing was queued.
    fn take_queued(&mut self) -> bool {
        let mut queued = self.exec.queued.lock();
        if queued.is_empty() {
            return false;
        }
        for task in queued.drain(..) {
            self.running.push(task);
        }
        true
    }

    /// Polls every stream that was woken until none is ready, dropping those that ended.
    fn poll_running(&mut self, cx: &mut Context<'_>) {
        // `FuturesUnordered` yields (waking the task) after polling each future once, so a
        // busy stream cannot starve the connection.
        while let Poll::Ready(Some(())) = self.running.poll_next_unpin(cx) {}
    }

    /// Drives the connection future `conn` and its streams until `conn` ends. Streams go
    /// first, so that the connection's poll flushes what they queued in the same pass.
    pub fn serve<'a, C: Future>(&'a mut self, conn: Pin<&'a mut C>) -> Serve<'a, C> {
        Serve {
            streams: self,
            conn,
        }
    }

    fn poll_serve<C: Future>(
        &mut self,
        cx: &mut Context<'_>,
        mut conn: Pin<&mut C>,
    ) -> Poll<C::Output> {
        loop {
            self.poll_running(cx);
            if let Poll::Ready(out) = conn.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            // The connection accepted new streams (or a stream started an upgrade): start
            // them now, in this pass.
            if !self.take_queued() {
                return Poll::Pending;
            }
        }
    }

    /// After the connection ended: lets the streams still in progress finish (they end as
    /// soon as they find the connection gone) for at most `grace`, then drops them.
    pub async fn finish(mut self, grace: Duration) {
        self.take_queued();
        if self.running.is_empty() {
            return;
        }
        let drain = async { while self.running.next().await.is_some() {} };
        if tokio::time::timeout(grace, drain).await.is_err() {
            tracing::debug!(
                streams = self.running.len(),
                "streams of a closed connection dropped"
            );
        }
    }
}

/// The future of [`Streams::serve`] (a plain struct: an `async fn` here made the connection
/// task's future fail the `Send` check through a higher-ranked lifetime).
pub struct Serve<'a, C> {
    streams: &'a mut Streams,
    conn: Pin<&'a mut C>,
}

impl<C: Future> Future for Serve<'_, C> {
    type Output = C::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let this = &mut *self;
        this.streams.poll_serve(cx, this.conn.as_mut())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use hyper::rt::Executor;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A connection stand-in: queues one stream per poll for `n` polls, then ends after all
    /// of them ran.
    #[tokio::test]
    async fn streams_queued_by_the_connection_run_in_the_same_pass() {
        let (mut streams, exec) = Streams::new();
        let ran = Arc::new(AtomicUsize::new(0));
        let queued = Arc::new(AtomicUsize::new(0));
        let conn = {
            let ran = ran.clone();
            let queued = queued.clone();
            std::future::poll_fn(move |cx| {
                if queued.load(Ordering::SeqCst) < 3 {
                    queued.fetch_add(1, Ordering::SeqCst);
                    let ran = ran.clone();
                    exec.execute(async move {
                        tokio::task::yield_now().await;
                        ran.fetch_add(1, Ordering::SeqCst);
                    });
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                if ran.load(Ordering::SeqCst) == 3 {
                    Poll::Ready(7)
                } else {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            })
        };
        tokio::pin!(conn);
        let out = tokio::time::timeout(Duration::from_secs(10), streams.serve(conn.as_mut()))
            .await
            .unwrap();
        assert_eq!(out, 7, "the connection's own output is returned");
        assert_eq!(ran.load(Ordering::SeqCst), 3, "every queued stream ran");
        assert!(streams.is_empty(), "finished streams are dropped");
    }

    #[test]
    fn small_answers_are_writes_and_named_gets() {
        use http::Method;
        let small = |m: &Method, p: &str, q: Option<&str>| answers_small(m, p, q);
        assert!(small(
            &Method::POST,
            "/api/v1/namespaces/a/configmaps",
            None
        ));
        assert!(small(
            &Method::DELETE,
            "/api/v1/namespaces/a/configmaps/x",
            None
        ));
        assert!(small(
            &Method::GET,
            "/api/v1/namespaces/a/configmaps/x",
            None
        ));
        assert!(small(&Method::GET, "/api/v1/namespaces/a", None));
        assert!(small(
            &Method::GET,
            "/apis/apps/v1/namespaces/a/deployments/d/scale",
            None
        ));
        assert!(small(
            &Method::GET,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/r",
            None
        ));
        assert!(small(
            &Method::GET,
            "/api/v1/namespaces/a/pods/p",
            Some("watch=false")
        ));
        assert!(!small(&Method::GET, "/api/v1/namespaces/a/pods", None));
        assert!(!small(&Method::GET, "/api/v1/namespaces", None));
        assert!(!small(&Method::GET, "/api/v1/pods", Some("limit=500")));
        assert!(!small(
            &Method::GET,
            "/apis/apps/v1/namespaces/a/deployments",
            None
        ));
        assert!(!small(
            &Method::GET,
            "/api/v1/namespaces/a/pods/p",
            Some("watch=true")
        ));
        assert!(!small(
            &Method::GET,
            "/api/v1/namespaces/a/configmaps",
            Some("a=b&watch=1")
        ));
        assert!(!small(
            &Method::GET,
            "/api/v1/namespaces/a/pods/p/log",
            Some("follow=true")
        ));
        assert!(!small(&Method::GET, "/openapi/v2", None));
        assert!(!small(&Method::GET, "/apis", None));
        assert!(!small(&Method::GET, "/api/v1/a/b/c/d/e/f", None));
    }

    /// A stream marked heavy runs in a task of its own; the next one is queued again.
    #[tokio::test]
    async fn a_stream_marked_heavy_is_spawned_and_only_that_one() {
        let (mut streams, exec) = Streams::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        exec.spawn_next();
        exec.execute(async move {
            let _ = tx.send(());
        });
        exec.execute(async {});
        assert!(streams.take_queued(), "the unmarked stream is queued");
        assert_eq!(streams.len(), 1);
        tokio::time::timeout(Duration::from_secs(10), rx)
            .await
            .unwrap()
            .unwrap();
    }

    /// A stream that never ends does not hold up the others, and `finish` gives up on it.
    #[tokio::test]
    async fn a_stuck_stream_blocks_neither_the_others_nor_the_end() {
        let (mut streams, exec) = Streams::new();
        let done = Arc::new(AtomicUsize::new(0));
        exec.execute(std::future::pending::<()>());
        for _ in 0..4 {
            let done = done.clone();
            exec.execute(async move {
                tokio::task::yield_now().await;
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        let conn = {
            let done = done.clone();
            std::future::poll_fn(move |cx| {
                if done.load(Ordering::SeqCst) == 4 {
                    Poll::Ready(())
                } else {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            })
        };
        tokio::pin!(conn);
        // The first poll of the connection queues nothing; the streams were queued before.
        streams.take_queued();
        tokio::time::timeout(Duration::from_secs(10), streams.serve(conn.as_mut()))
            .await
            .unwrap();
        assert_eq!(streams.len(), 1, "only the stuck stream is left");
        tokio::time::timeout(
            Duration::from_secs(10),
            streams.finish(Duration::from_millis(20)),
        )
        .await
        .unwrap();
    }
}
