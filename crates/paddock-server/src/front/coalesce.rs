//! Fewer TLS records and writes on the HTTP/2 front connections of clients (hyper's server,
//! which writes through the h2 crate). The short upstream connections do without it: their
//! client (`paddock_h2::client`) writes all it has queued in one write per run.
//!
//! The h2 crate copies a frame into its 16 KB write buffer only when the payload is small
//! (256 bytes when the transport says it writes vectored, as tokio-rustls does; 1 KB
//! otherwise); a larger DATA payload is chained behind the buffer, and the buffer must be
//! written out and flushed before the next frame is encoded. Left so, a small GET's answer (a
//! few hundred bytes) is one TLS record and one `sendmsg` per response, however many
//! responses are ready at once, and rustls' writes are a large part of a small GET's cost
//! (docs/performance/sessions-07-10.md has the profile).
//!
//! [`Coalescing`] tells h2 that it does not write vectored, so that payloads up to 1 KB are
//! copied into h2's buffer and many small answers leave in one record and one write. The cost
//! of that choice, a large DATA frame written as two calls (h2's buffer with the frame's
//! head, then the payload), is taken back here: a write that fits is held and sent together
//! with the next one, as one vectored write to rustls, so there is never more than one
//! write per chained frame.
//! Flush and shutdown send what is held first (h2 flushes after every batch of frames). On
//! HTTP/1.1 connections it is off, a plain pass-through (hyper's HTTP/1.1 writer already
//! gathers a response's head and body).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Writes are held, up to this many bytes in all, until the next write that does not fit,
/// a flush or a shutdown: one TLS record's worth, so that h2's buffer of small frames and the
/// large payload chained behind it (two calls when not vectored) leave in one write.
const HOLD_BELOW: usize = 16 * 1024;

/// A transport that holds short writes back to send them with the next one (see the module).
pub struct Coalescing<T> {
    inner: T,
    /// Off for HTTP/1.1: a plain pass-through.
    on: bool,
    held: Vec<u8>,
}

impl<T> Coalescing<T> {
    /// Wraps `inner`; `on` for an HTTP/2 connection.
    pub fn new(inner: T, on: bool) -> Self {
        Coalescing {
            inner,
            on,
            held: Vec::new(),
        }
    }
}

impl<T: AsyncWrite + Unpin> Coalescing<T> {
    /// Writes the held bytes followed by as much of `data` as the transport takes; returns
    /// how much of `data` was taken (0 when only held bytes went out).
    fn poll_send_with(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let bufs = [IoSlice::new(&self.held), IoSlice::new(data)];
        let n = ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, &bufs))?;
        if n == 0 {
            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
        }
        let from_held = n.min(self.held.len());
        self.held.drain(..from_held);
        Poll::Ready(Ok(n - from_held))
    }

    /// Sends everything held.
    fn poll_send_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            ready!(self.poll_send_with(cx, &[]))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Coalescing<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalescing<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if !this.on {
            return Pin::new(&mut this.inner).poll_write(cx, data);
        }
        if data.len() < HOLD_BELOW && this.held.len() + data.len() <= HOLD_BELOW {
            this.held.extend_from_slice(data);
            return Poll::Ready(Ok(data.len()));
        }
        if this.held.is_empty() {
            return Pin::new(&mut this.inner).poll_write(cx, data);
        }
        loop {
            let taken = ready!(this.poll_send_with(cx, data))?;
            if taken > 0 || data.is_empty() {
                return Poll::Ready(Ok(taken));
            }
            if this.held.is_empty() {
                return Pin::new(&mut this.inner).poll_write(cx, data);
            }
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if !this.on {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        }
        // Not used by h2 (`is_write_vectored` is false); the first non-empty slice, as the
        // trait's default does.
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &**b);
        Pin::new(this).poll_write(cx, first)
    }

    fn is_write_vectored(&self) -> bool {
        !self.on && self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_send_held(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_send_held(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A transport that records each write call and takes at most `cap` bytes per call.
    struct Recorder {
        calls: Vec<Vec<u8>>,
        cap: usize,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = data.len().min(self.cap);
            self.calls.push(data[..n].to_vec());
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            let n = all.len().min(self.cap);
            self.calls.push(all[..n].to_vec());
            Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn recorder(cap: usize) -> Recorder {
        Recorder {
            calls: Vec::new(),
            cap,
        }
    }

    #[tokio::test]
    async fn a_frame_head_leaves_with_its_payload_in_one_call() {
        let mut w = Coalescing::new(recorder(usize::MAX), true);
        assert!(!w.is_write_vectored(), "h2 must copy small payloads");
        w.write_all(b"head-9by").await.unwrap();
        w.write_all(&[7u8; 4000]).await.unwrap();
        w.flush().await.unwrap();
        assert_eq!(w.inner.calls.len(), 1, "one write for head and payload");
        assert_eq!(w.inner.calls[0].len(), 8 + 4000);
        assert_eq!(&w.inner.calls[0][..8], b"head-9by");
    }

    #[tokio::test]
    async fn short_writes_are_sent_in_order_on_flush_even_in_pieces() {
        let mut w = Coalescing::new(recorder(3), true);
        w.write_all(b"abcde").await.unwrap();
        w.write_all(b"fgh").await.unwrap();
        assert!(w.inner.calls.is_empty(), "short writes are held");
        w.flush().await.unwrap();
        w.write_all(&[b'z'; 20000]).await.unwrap();
        w.write_all(b"tail").await.unwrap();
        w.shutdown().await.unwrap();
        let sent: Vec<u8> = w.inner.calls.concat();
        let mut want = b"abcdefgh".to_vec();
        want.extend([b'z'; 20000]);
        want.extend(b"tail");
        assert_eq!(sent, want, "every byte once, in order");
        assert!(w.held.is_empty());
    }

    #[tokio::test]
    async fn a_write_too_large_to_hold_leaves_with_what_was_held() {
        let mut w = Coalescing::new(recorder(usize::MAX), true);
        w.write_all(&[1u8; 9000]).await.unwrap();
        w.write_all(&[2u8; HOLD_BELOW]).await.unwrap();
        assert_eq!(
            w.inner.calls.len(),
            1,
            "held bytes and the large write in one call"
        );
        assert_eq!(w.inner.calls[0].len(), 9000 + HOLD_BELOW);
        w.flush().await.unwrap();
        assert_eq!(w.inner.calls.len(), 1, "nothing left to send");
    }

    #[tokio::test]
    async fn off_is_a_plain_pass_through() {
        let mut w = Coalescing::new(recorder(usize::MAX), false);
        assert!(w.is_write_vectored());
        w.write_all(b"abc").await.unwrap();
        assert_eq!(w.inner.calls, vec![b"abc".to_vec()]);
    }
}
