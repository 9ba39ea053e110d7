//! The yield lane: while a light tenant is active, a heavy tenant's requests are served on
//! threads of a lower OS priority (docs/fairshare.md "Yield lane"; who yields is paddock-core's
//! `FairQueue::yields`).
//!
//! Pacing bounds how much of a heavy tenant's work is admitted, but what it admits would
//! otherwise run on the same tokio workers as the light tenants' requests, so a light tenant's
//! small GET could wait behind a heavy tenant's LIST being translated, in tokio's run queue
//! and for the core. Here such a request — its handling and its answer's body to the last
//! byte — runs as a task of a second runtime whose threads have a higher nice value
//! (`LANE_NICE`): the kernel's scheduler then runs the main workers first whenever both want a
//! core, and the main workers' queues hold only the light tenants' tasks (and the heavy
//! tenant's connection).
//!
//! Every poll of the offloaded request is made *in the main runtime's context*: sockets it
//! opens (an upstream connection dialled for it), tasks it spawns (hyper's connection tasks)
//! and timers belong to the main runtime, so a connection dialled for a heavy tenant and
//! reused later for a light one is never driven by the low-priority threads. Only the CPU work
//! of the polls moves. The answer's head and body frames come back through channels; dropping
//! the answer (the client went away) aborts the task, which drops the request's seats and
//! in-flight slot with it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::Response;
use http::response::Parts;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::body::ResBody;
use crate::error::{BoxError, ServerError};

/// How much nicer than the process the lane's threads are: at a difference of 10 the
/// kernel's fair scheduler gives a main worker about 9 times the CPU of a lane thread when
/// both want the same core (CFS weights 1024 and 110), and the lane still progresses.
pub const LANE_NICE: i32 = 10;

/// Body frames in flight between the lane and the connection (a frame is a chunk of the
/// answer, up to tens of KiB): enough to keep both sides busy, little memory.
const FRAMES: usize = 4;

/// The lane: a runtime of low-priority threads, and the main runtime whose context its
/// polls are made in.
pub struct YieldLane {
    runtime: Option<Runtime>,
    lane: Handle,
    main: Handle,
}

impl Drop for YieldLane {
    fn drop(&mut self) {
        // Not `Runtime::drop`, which blocks and may not be called in an async context.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl YieldLane {
    /// A lane of `threads` threads beside the current (main) runtime; `None` outside a
    /// runtime or when the threads cannot be started (requests then stay on the main one).
    pub fn start(threads: usize) -> Option<Self> {
        let main = Handle::try_current().ok()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("paddock-lane")
            .on_thread_start(lower_priority)
            .enable_all()
            .build();
        match runtime {
            Ok(rt) => Some(YieldLane {
                lane: rt.handle().clone(),
                runtime: Some(rt),
                main,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "the fair queue's yield lane could not start: heavy tenants stay on the main workers");
                None
            }
        }
    }

    /// Serves `request` (the admitted request's handling) on the lane; its answer's body is
    /// polled there too.
    pub fn offload<F>(&self, request: F) -> Offloaded
    where
        F: Future<Output = Result<Response<ResBody>, ServerError>> + Send + 'static,
    {
        let (head_tx, head) = oneshot::channel();
        let (frames_tx, frames) = mpsc::channel(FRAMES);
        let task = self.lane.spawn(InMain {
            main: self.main.clone(),
            inner: serve(request, head_tx, frames_tx),
        });
        Offloaded {
            head,
            frames: Some(frames),
            task: Some(AbortOnDrop(task)),
        }
    }
}

/// Raises the calling thread's nice value by [`LANE_NICE`] (Linux: the nice value is per
/// thread, and `setpriority(PRIO_PROCESS, 0, ..)` sets the calling thread's). Raising it needs
/// no privilege; where it fails the lane still separates the run queues.
fn lower_priority() {
    let now = rustix::process::getpriority_process(None).unwrap_or(0);
    if let Err(e) = rustix::process::setpriority_process(None, (now + LANE_NICE).min(19)) {
        tracing::warn!(error = %e, "the yield lane's thread keeps its priority");
    }
}

/// The answer's head, as the lane hands it back.
struct Head {
    parts: Parts,
    hint: SizeHint,
    end: bool,
}

type FrameResult = Result<Frame<Bytes>, BoxError>;

/// The lane's task: the request's handling, then its answer's body frame by frame.
async fn serve<F>(
    request: F,
    head: oneshot::Sender<Result<Head, ServerError>>,
    frames: mpsc::Sender<FrameResult>,
) where
    F: Future<Output = Result<Response<ResBody>, ServerError>>,
{
    let (parts, mut body) = match request.await {
        Ok(resp) => resp.into_parts(),
        Err(e) => {
            let _ = head.send(Err(e));
            return;
        }
    };
    let (hint, end) = (body.size_hint(), body.is_end_stream());
    if head.send(Ok(Head { parts, hint, end })).is_err() {
        return;
    }
    while let Some(frame) = body.frame().await {
        let failed = frame.is_err();
        if frames.send(frame).await.is_err() || failed {
            return;
        }
    }
}

pin_project_lite::pin_project! {
    /// Polls `inner` in the main runtime's context (see the module's docs).
    struct InMain<F> {
        main: Handle,
        #[pin]
        inner: F,
    }
}

impl<F: Future> Future for InMain<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _main = this.main.enter();
        this.inner.poll(cx)
    }
}

/// Aborts the lane's task when the answer (or the wait for it) is dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The wait for an offloaded request's answer.
pub struct Offloaded {
    head: oneshot::Receiver<Result<Head, ServerError>>,
    frames: Option<mpsc::Receiver<FrameResult>>,
    task: Option<AbortOnDrop>,
}

impl Future for Offloaded {
    type Output = Result<Response<ResBody>, ServerError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let head = match ready!(Pin::new(&mut this.head).poll(cx)) {
            Ok(Ok(head)) => head,
            Ok(Err(e)) => return Poll::Ready(Err(e)),
            Err(_) => return Poll::Ready(Err(lane_failed())),
        };
        let (Some(frames), Some(task)) = (this.frames.take(), this.task.take()) else {
            return Poll::Ready(Err(lane_failed()));
        };
        let body = LaneBody {
            frames,
            task,
            hint: head.hint,
            end: head.end,
            done: false,
        };
        Poll::Ready(Ok(Response::from_parts(head.parts, ResBody::boxed(body))))
    }
}

fn lane_failed() -> ServerError {
    ServerError::Internal("the request's task on the yield lane ended without an answer".into())
}

/// The answer's body as the lane's task sends it.
struct LaneBody {
    frames: mpsc::Receiver<FrameResult>,
    task: AbortOnDrop,
    hint: SizeHint,
    end: bool,
    /// The end was returned (the task's handle is not polled again).
    done: bool,
}

impl Body for LaneBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(frame) = ready!(this.frames.poll_recv(cx)) {
            return Poll::Ready(Some(frame));
        }
        // The task let go of its sender: its end, normal or not (a panic must not look like
        // the end of the answer).
        let ended = ready!(Pin::new(&mut this.task.0).poll(cx));
        this.done = true;
        match ended {
            Ok(()) => Poll::Ready(None),
            Err(e) => {
                let e: BoxError = Box::new(e);
                Poll::Ready(Some(Err(e)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.end
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}

#[cfg(test)]
#[path = "fair_lane_tests.rs"]
mod tests;
