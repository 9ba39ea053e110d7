//! Entry points shared by the fuzz targets (`fuzz/fuzz_targets/*.rs`, cargo-fuzz) and the
//! corpus replay (`tests/fuzz_corpus.rs`, stable), so that every corpus file is checked in
//! every `cargo test -p paddock-h2`. A violated invariant is `Err(description)` (the callers
//! panic on it); a panic anywhere (a spawned task's included) is what the fuzzer hunts for.
//!
//! - [`frames`]: the peer's bytes through the frame decoder as the client's read loop takes
//!   them (the same frames and error however the bytes are split; every frame re-encodes to
//!   itself), then through a whole client connection with three requests open: no panic, and
//!   the connection and every request end once the peer closes.
//! - [`hpack`]: header blocks through one decoder (its dynamic table carried across blocks)
//!   and through the client's `recv::decode`: the table's size is the sum of its entries and
//!   within its maximum and the limit; the decoded list within `max_list`; no decoded name or
//!   value is a slice of the block; both paths agree.

use std::future::poll_fn;
use std::ops::Range;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::Request;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::{self, Config, Error, recv};
use crate::frame::{self, DEFAULT_MAX_FRAME, Frame, FrameError};
use crate::hpack::decoder::{Decoder, Name};
use crate::hpack::{HpackError, entry_size};

/// Chunk sizes derived from the input itself (its last byte), so the fuzzer explores splits.
fn chunk_size(data: &[u8]) -> usize {
    data.last().map_or(1, |b| usize::from(*b % 31) + 1)
}

/// The frames the client's read loop takes off `data` arriving in pieces of `chunk` bytes,
/// and the error that ended it, if one did.
fn take_all(data: &[u8], chunk: usize) -> (Vec<Frame>, Option<FrameError>) {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for piece in data.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match frame::next(&mut buf, DEFAULT_MAX_FRAME) {
                Ok(Some(f)) => frames.push(f),
                Ok(None) => break,
                Err(e) => return (frames, Some(e)),
            }
        }
    }
    (frames, None)
}

/// The frame codec over `data`: split-independence and re-encoding.
fn codec(data: &[u8]) -> Result<(), String> {
    let whole = take_all(data, data.len().max(1));
    let split = take_all(data, chunk_size(data));
    if whole != split {
        return Err(format!("whole {whole:?} but split {split:?}"));
    }
    if let Some(e) = &whole.1 {
        let _ = e.reason();
    }
    for f in whole.0 {
        let mut out = Vec::new();
        f.encode(&mut out);
        let mut buf = BytesMut::from(&out[..]);
        let again = frame::next(&mut buf, DEFAULT_MAX_FRAME);
        // Padding is not re-encoded: a DATA frame's flow is then its data.
        let want = match f {
            Frame::Data {
                stream, end, data, ..
            } => Frame::Data {
                stream,
                end,
                flow: data.len(),
                data,
            },
            f => f,
        };
        if again != Ok(Some(want.clone())) || !buf.is_empty() {
            return Err(format!("{want:?} re-encoded decodes as {again:?}"));
        }
    }
    Ok(())
}

thread_local! {
    static RUNTIME: std::io::Result<tokio::runtime::Runtime> =
        tokio::runtime::Builder::new_current_thread().enable_time().build();
}

/// A whole client connection reading `data` from its peer, with three requests (streams 1,
/// 3 and 5) open, their answers read to the end.
fn client_read(data: &[u8]) -> Result<(), String> {
    RUNTIME.with(|rt| match rt {
        Ok(rt) => rt.block_on(connection(data)),
        Err(e) => Err(format!("runtime: {e}")),
    })
}

async fn connection(data: &[u8]) -> Result<(), String> {
    let cfg = Config {
        stream_window: 65_535,
        conn_window: 1 << 20,
        max_header_list: 16 * 1024,
        keepalive_interval: Duration::from_secs(30),
        keepalive_timeout: Duration::from_secs(20),
    };
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (send, conn) = client::connect(ours, cfg);
    let conn = tokio::spawn(conn);
    let mut requests = Vec::new();
    for path in ["/a", "/b", "/c"] {
        let send = send.clone();
        requests.push(tokio::spawn(async move {
            let head = Request::get(format!("https://upstream.test{path}"))
                .body(())
                .map_err(|e| Error::Malformed(e.to_string().into()))?;
            let (_, mut body) = send.send(&head, Bytes::new()).await?;
            while let Some(d) = poll_fn(|cx| body.poll_data(cx)).await {
                d?;
            }
            let _ = body.take_trailers();
            Ok::<_, Error>(())
        }));
    }
    for _ in 0..100 {
        if send.opened() >= 3 {
            break;
        }
        tokio::task::yield_now().await;
    }
    if send.opened() < 3 {
        return Err(format!("only {} streams opened", send.opened()));
    }
    drop(send);
    let (mut from_client, mut to_client) = tokio::io::split(theirs);
    let drain = tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        while from_client.read(&mut buf).await.is_ok_and(|n| n > 0) {}
    });
    for piece in data.chunks(chunk_size(data)) {
        if to_client.write_all(piece).await.is_err() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let _ = to_client.shutdown().await;
    let all = async {
        let mut panics = Vec::new();
        for t in requests {
            if let Err(e) = t.await {
                panics.push(format!("a request: {e}"));
            }
        }
        if let Err(e) = conn.await {
            panics.push(format!("the connection: {e}"));
        }
        if let Err(e) = drain.await {
            panics.push(format!("the peer's reader: {e}"));
        }
        panics
    };
    match tokio::time::timeout(Duration::from_secs(10), all).await {
        Ok(panics) if panics.is_empty() => Ok(()),
        Ok(panics) => Err(panics.join("; ")),
        Err(_) => Err("the connection or a request did not end after the peer closed".into()),
    }
}

/// `data` as the peer's bytes: see the module's documentation.
pub fn frames(data: &[u8]) -> Result<(), String> {
    codec(data)?;
    client_read(data)
}

/// Whether `b` lies inside `block`'s memory.
fn inside(block: &Range<usize>, b: &[u8]) -> bool {
    !b.is_empty() && block.contains(&(b.as_ptr() as usize))
}

/// `data`: the table limit (its first byte × 32), the header-list limit ((second + 1) × 64),
/// then header blocks, each after its length (2 bytes, big-endian; cut to what is left).
pub fn hpack(data: &[u8]) -> Result<(), String> {
    let (Some(&t), Some(&l)) = (data.first(), data.get(1)) else {
        return Ok(());
    };
    let limit = usize::from(t) * 32;
    let max_list = (usize::from(l) + 1) * 64;
    let mut raw = Decoder::new(limit);
    let mut client = Decoder::new(limit);
    let mut rest = data.get(2..).unwrap_or_default();
    while let [hi, lo, tail @ ..] = rest {
        let n = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (piece, after) = tail.split_at(n);
        rest = after;
        // A block of its own, so that a slice of it would be recognised.
        let block = Bytes::copy_from_slice(piece);
        let range = block.as_ptr() as usize..block.as_ptr() as usize + block.len();
        let (mut list, mut regular, mut pinned) = (0usize, 0usize, None);
        let got = raw.decode(&block, max_list, |name, value| {
            let name_bytes: &[u8] = match &name {
                Name::Pseudo(p) => p,
                Name::Header(h) => {
                    regular += 1;
                    h.as_str().as_bytes()
                }
            };
            list += entry_size(name_bytes.len(), value.len());
            if inside(&range, name_bytes) || inside(&range, &value) {
                pinned = Some(format!("{name:?}: {value:?}"));
            }
        });
        raw.check_table()?;
        if let Some(p) = pinned {
            return Err(format!("a slice of the header block: {p}"));
        }
        if list > max_list {
            return Err(format!("{list} bytes of fields emitted, above {max_list}"));
        }
        let fields = recv::decode(&mut client, &block, max_list);
        client.check_table()?;
        if raw.table_size() != client.table_size() {
            return Err(format!(
                "table sizes {} and {} after the same block",
                raw.table_size(),
                client.table_size()
            ));
        }
        match (&got, fields) {
            (Ok(()) | Err(HpackError::TooLarge(_)), Ok(f)) => {
                let mut kept = 0usize;
                for (name, value) in &f.headers {
                    kept += entry_size(name.as_str().len(), value.len());
                    if inside(&range, value.as_bytes()) {
                        return Err(format!("{name}: {value:?} is a slice of the block"));
                    }
                }
                if kept > max_list {
                    return Err(format!("{kept} bytes of headers kept, above {max_list}"));
                }
                if got.is_ok() && f.bad.is_none() && f.headers.len() != regular {
                    return Err(format!(
                        "{} headers kept of {regular} decoded",
                        f.headers.len()
                    ));
                }
                if matches!(got, Err(HpackError::TooLarge(n)) if n != max_list) {
                    return Err(format!("{got:?} with max_list {max_list}"));
                }
            }
            // A connection error (COMPRESSION_ERROR): nothing follows on this connection.
            (Err(e), Err(_)) if !matches!(e, HpackError::TooLarge(_)) => break,
            (got, fields) => {
                return Err(format!(
                    "the decoder said {got:?}, the client {:?}",
                    fields.map(|f| f.bad).map_err(|e| e.msg)
                ));
            }
        }
    }
    Ok(())
}
