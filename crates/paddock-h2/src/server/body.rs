//! A request's body as the service reads it: DATA handed over by the connection task, the
//! stream's window given back as it is read.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use parking_lot::Mutex;

use super::state::State;

/// Why a request body could not be read to its end.
#[derive(Debug, Clone, thiserror::Error)]
#[error("request body: {0}")]
pub struct BodyError(Arc<str>);

impl BodyError {
    pub(super) fn new(why: &str) -> Self {
        BodyError(why.into())
    }
}

/// The body of a request on a lean front connection.
pub struct RecvBody {
    /// `None`: the request ended with its head (END_STREAM on HEADERS).
    stream: Option<(Arc<Mutex<State>>, u32)>,
    content_length: Option<u64>,
}

impl RecvBody {
    pub(super) fn empty() -> Self {
        RecvBody {
            stream: None,
            content_length: Some(0),
        }
    }

    pub(super) fn new(shared: Arc<Mutex<State>>, id: u32, content_length: Option<u64>) -> Self {
        RecvBody {
            stream: Some((shared, id)),
            content_length,
        }
    }
}

impl Body for RecvBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let Some((shared, id)) = &self.stream else {
            return Poll::Ready(None);
        };
        let (got, wake) = {
            let mut st = shared.lock();
            let got = st.poll_data(cx, *id);
            let wake = if st.out.is_empty() { None } else { st.notify() };
            (got, wake)
        };
        if let Some(w) = wake {
            w.wake();
        }
        got.map(|o| o.map(|r| r.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        match &self.stream {
            None => true,
            Some((shared, id)) => shared.lock().body_ended(*id),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self.content_length {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

impl Drop for RecvBody {
    fn drop(&mut self) {
        let Some((shared, id)) = self.stream.take() else {
            return;
        };
        let wake = {
            let mut st = shared.lock();
            st.drop_body(id);
            if st.out.is_empty() { None } else { st.notify() }
        };
        if let Some(w) = wake {
            w.wake();
        }
    }
}

impl std::fmt::Debug for RecvBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBody")
            .field("stream", &self.stream.as_ref().map(|(_, id)| *id))
            .field("content_length", &self.content_length)
            .finish()
    }
}
