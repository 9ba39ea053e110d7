//! One stream's work: the service's future, then its answer's head and body sent on the
//! stream as the windows allow. It runs in the connection's task (a small answer) or in a
//! task of its own (what the service places there); either way it stops, dropping the
//! service's future or body, as soon as the stream is reset or the connection ends (a
//! cancelled watch lets go of its upstream watch at once).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::Response;
use http_body::Body;
use parking_lot::Mutex;

use super::date;
use super::state::State;
use crate::frame::reason;

enum Phase<F, B> {
    /// Waiting for the service's answer.
    Answer(F),
    /// Sending the body: the chunk being sent, and whether it is the last.
    Body {
        body: B,
        chunk: Bytes,
        end: bool,
    },
    Done,
}

pub(super) struct Respond<F, B> {
    shared: Arc<Mutex<State>>,
    id: u32,
    phase: Phase<F, B>,
    started: bool,
}

impl<F, B> Respond<F, B> {
    pub fn new(shared: Arc<Mutex<State>>, id: u32, answer: F) -> Self {
        Respond {
            shared,
            id,
            phase: Phase::Answer(answer),
            started: false,
        }
    }
}

/// Wakes the connection task if `st` queued frames and it is not already awake.
fn queued(st: &mut State) -> Option<Waker> {
    if st.out.is_empty() { None } else { st.notify() }
}

impl<F, B> Future for Respond<F, B>
where
    F: Future<Output = Response<B>> + Unpin,
    B: Body<Data = Bytes> + Unpin,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        loop {
            match &mut this.phase {
                Phase::Answer(f) => {
                    if !this.started {
                        // A stream reset before its work began (a client opening and resetting
                        // streams in a loop) costs nothing more.
                        this.started = true;
                        if this.shared.lock().poll_reset(cx, this.id) {
                            return this.finish(true);
                        }
                    }
                    let Poll::Ready(resp) = Pin::new(f).poll(cx) else {
                        if this.shared.lock().poll_reset(cx, this.id) {
                            return this.finish(true);
                        }
                        return Poll::Pending;
                    };
                    let (mut parts, body) = resp.into_parts();
                    date::add_if_absent(&mut parts.headers);
                    let end = body.is_end_stream();
                    let (sent, wake) = {
                        let mut st = this.shared.lock();
                        let sent = st.send_head(this.id, parts.status, &parts.headers, end);
                        (sent, queued(&mut st))
                    };
                    if let Some(w) = wake {
                        w.wake();
                    }
                    if !sent {
                        return this.finish(true);
                    }
                    if end {
                        return this.finish(false);
                    }
                    this.phase = Phase::Body {
                        body,
                        chunk: Bytes::new(),
                        end: false,
                    };
                }
                Phase::Body { body, chunk, end } => {
                    if !chunk.is_empty() || *end {
                        let (sent, wake) = {
                            let mut st = this.shared.lock();
                            let sent = st.poll_send(cx, this.id, chunk, *end);
                            (sent, queued(&mut st))
                        };
                        if let Some(w) = wake {
                            w.wake();
                        }
                        match sent {
                            Poll::Pending => return Poll::Pending,
                            Poll::Ready(false) => return this.finish(true),
                            Poll::Ready(true) if *end => return this.finish(false),
                            Poll::Ready(true) => {}
                        }
                    }
                    match Pin::new(&mut *body).poll_frame(cx) {
                        Poll::Ready(Some(Ok(frame))) => {
                            // Trailers are not sent (no answer paddock makes has them).
                            if let Ok(data) = frame.into_data() {
                                *chunk = data;
                                *end = body.is_end_stream();
                            }
                        }
                        Poll::Ready(None) => *end = true,
                        Poll::Ready(Some(Err(_))) => {
                            let wake = {
                                let mut st = this.shared.lock();
                                st.reset_stream(this.id, reason::INTERNAL_ERROR);
                                queued(&mut st)
                            };
                            if let Some(w) = wake {
                                w.wake();
                            }
                            return this.finish(true);
                        }
                        Poll::Pending => {
                            if this.shared.lock().poll_reset(cx, this.id) {
                                return this.finish(true);
                            }
                            return Poll::Pending;
                        }
                    }
                }
                Phase::Done => return Poll::Ready(()),
            }
        }
    }
}

impl<F, B> Respond<F, B> {
    /// Ends the stream's answer (`abandoned`: before its end, which resets the stream) and
    /// lets go of the service's future or body.
    fn finish(&mut self, abandoned: bool) -> Poll<()> {
        self.phase = Phase::Done;
        let wake = {
            let mut st = self.shared.lock();
            st.answer_done(self.id, abandoned);
            queued(&mut st)
        };
        if let Some(w) = wake {
            w.wake();
        }
        Poll::Ready(())
    }
}

impl<F, B> Drop for Respond<F, B> {
    /// Dropped before its end (the connection's task ended, or a runtime shut down): the
    /// stream is reset so that the client does not wait for it.
    fn drop(&mut self) {
        if !matches!(self.phase, Phase::Done) {
            let _ = self.finish(true);
        }
    }
}
