//! A raw-frame HTTP/2 client over TLS for the front door's abuse test (tests/front_door.rs):
//! it writes whatever frames it is told to, byte by byte as RFC 9113 §4.1 lays them out, and
//! records what the server sent back (GOAWAY, RST_STREAM, the answers' status, the end of the
//! connection) with the time and the number of frames it had sent by then.
//!
//! Header blocks are encoded by hand ([`hpack`]): literal fields with and without indexing, no
//! Huffman, and indexed references; enough to build the blocks an attacker sends. The only
//! thing decoded is an answer's `:status` (three digits, which servers Huffman-encode).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// What a client sends first (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types (RFC 9113 §6).
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
}

/// Error codes (RFC 9113 §7).
pub mod code {
    pub const NO_ERROR: u32 = 0x0;
    pub const PROTOCOL_ERROR: u32 = 0x1;
    pub const CANCEL: u32 = 0x8;
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
}

/// The name of an HTTP/2 error code.
pub fn code_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("0x{code:x}"), |n| (*n).to_owned())
}

/// Appends one frame: the 9-byte header (24-bit length, type, flags, 31-bit stream id) and
/// the payload.
pub fn frame(buf: &mut Vec<u8>, ty: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = u32::try_from(payload.len())
        .unwrap_or(u32::MAX)
        .min(0xff_ffff);
    buf.extend_from_slice(&len.to_be_bytes()[1..]);
    buf.push(ty);
    buf.push(flags);
    buf.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    buf.extend_from_slice(&payload[..len as usize]);
}

/// Appends a header block as one HEADERS frame and as many CONTINUATION frames as frames of
/// at most 16,384 bytes (the default SETTINGS_MAX_FRAME_SIZE) need; END_HEADERS on the last.
/// Returns the number of frames.
pub fn header_block(buf: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool) -> u64 {
    const MAX: usize = 16_384;
    let chunks: Vec<&[u8]> = if block.is_empty() {
        vec![&[]]
    } else {
        block.chunks(MAX).collect()
    };
    let last = chunks.len() - 1;
    for (i, c) in chunks.iter().enumerate() {
        let mut flags = if i == last { flag::END_HEADERS } else { 0 };
        let ty = if i == 0 {
            if end_stream {
                flags |= flag::END_STREAM;
            }
            kind::HEADERS
        } else {
            kind::CONTINUATION
        };
        frame(buf, ty, flags, stream, c);
    }
    chunks.len() as u64
}

/// HPACK (RFC 7541) encoding by hand, without Huffman.
pub mod hpack {
    /// An integer with an `n`-bit prefix; `first` holds the bits above the prefix (§5.1).
    pub fn int(buf: &mut Vec<u8>, n: u8, first: u8, value: usize) {
        let max = (1usize << n) - 1;
        if value < max {
            buf.push(first | value as u8);
            return;
        }
        buf.push(first | max as u8);
        let mut rest = value - max;
        while rest >= 128 {
            buf.push((rest % 128) as u8 | 0x80);
            rest /= 128;
        }
        buf.push(rest as u8);
    }

    /// A string literal, not Huffman-encoded (§5.2).
    pub fn string(buf: &mut Vec<u8>, s: &[u8]) {
        int(buf, 7, 0, s.len());
        buf.extend_from_slice(s);
    }

    /// Indexed header field (§6.1): 1 to 61 the static table, 62 and up the dynamic table,
    /// newest entry first.
    pub fn indexed(buf: &mut Vec<u8>, index: usize) {
        int(buf, 7, 0x80, index);
    }

    /// Literal header field without indexing, new name (§6.2.2).
    pub fn literal(buf: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        buf.push(0x00);
        string(buf, name);
        string(buf, value);
    }

    /// Literal header field without indexing, the name from the table (§6.2.2).
    pub fn literal_name(buf: &mut Vec<u8>, name_index: usize, value: &[u8]) {
        int(buf, 4, 0x00, name_index);
        string(buf, value);
    }

    /// Literal header field with incremental indexing, new name (§6.2.1): the field becomes
    /// dynamic table entry 62.
    pub fn literal_indexed(buf: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        buf.push(0x40);
        string(buf, name);
        string(buf, value);
    }

    /// A request's pseudo-header fields, nothing added to the dynamic table: `:method` (GET
    /// and POST from the static table), `:scheme https`, `:authority`, `:path`.
    pub fn request(method: &str, path: &str) -> Vec<u8> {
        let mut b = Vec::new();
        match method {
            "GET" => indexed(&mut b, 2),
            "POST" => indexed(&mut b, 3),
            m => literal_name(&mut b, 2, m.as_bytes()),
        }
        indexed(&mut b, 7); // :scheme https
        literal_name(&mut b, 1, b"127.0.0.1"); // :authority
        if path == "/" {
            indexed(&mut b, 4);
        } else {
            literal_name(&mut b, 4, path.as_bytes());
        }
        b
    }

    /// The `:status` of an answer's header block when it is its first field and either a
    /// static-table entry or a literal (plain, or Huffman-coded digits); `"dyn"` for a
    /// reference into the server's dynamic table, which is not tracked here.
    pub fn status(block: &[u8]) -> Option<String> {
        const STATIC: [&str; 7] = ["200", "204", "206", "304", "400", "404", "500"];
        let mut at = 0;
        loop {
            let b = *block.get(at)?;
            if b & 0xe0 == 0x20 {
                // A dynamic table size update may come first (§6.3).
                let (_, n) = read_int(&block[at..], 5)?;
                at += n;
                continue;
            }
            if b & 0x80 != 0 {
                let (i, _) = read_int(&block[at..], 7)?;
                return match i {
                    8..=14 => Some(STATIC[i - 8].to_owned()),
                    62.. => Some("dyn".to_owned()),
                    _ => None,
                };
            }
            let prefix = if b & 0xc0 == 0x40 { 6 } else { 4 };
            let (name, n) = read_int(&block[at..], prefix)?;
            if !(8..=14).contains(&name) {
                return None;
            }
            let rest = &block[at + n..];
            let huffman = rest.first()? & 0x80 != 0;
            let (len, n) = read_int(rest, 7)?;
            let value = rest.get(n..n + len)?;
            return if huffman {
                huffman_digits(value)
            } else {
                String::from_utf8(value.to_vec()).ok()
            };
        }
    }

    /// An integer with an `n`-bit prefix and how many bytes it took.
    fn read_int(b: &[u8], n: u8) -> Option<(usize, usize)> {
        let max = (1usize << n) - 1;
        let mut v = usize::from(*b.first()?) & max;
        if v < max {
            return Some((v, 1));
        }
        let mut shift = 0;
        for (i, byte) in b.iter().enumerate().skip(1) {
            v += usize::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some((v, i + 1));
            }
            shift += 7;
            if shift > 28 {
                return None;
            }
        }
        None
    }

    /// A Huffman-coded string of digits (RFC 7541 Appendix B: '0'-'2' are the 5-bit codes
    /// 0-2, '3'-'9' the 6-bit codes 0x19-0x1f; the padding is all ones). `None` for anything
    /// else.
    fn huffman_digits(b: &[u8]) -> Option<String> {
        let (mut code, mut len, mut out) = (0u32, 0u32, String::new());
        for byte in b {
            for i in (0..8).rev() {
                code = (code << 1) | u32::from((byte >> i) & 1);
                len += 1;
                let digit = match (len, code) {
                    (5, 0..=2) => Some(code),
                    (6, 0x19..=0x1f) => Some(code - 0x19 + 3),
                    _ => None,
                };
                if let Some(d) = digit {
                    out.push(char::from(b'0' + d as u8));
                    (code, len) = (0, 0);
                } else if (len >= 6 && code != (1 << len) - 1) || len > 7 {
                    // Not a digit, and not the padding (at most 7 one bits).
                    return None;
                }
            }
        }
        // At most 7 bits of padding, all ones.
        (len < 8 && code == (1 << len) - 1).then_some(out)
    }
}

/// A GOAWAY the server sent.
#[derive(Debug, Clone)]
pub struct GoAway {
    pub last_stream: u32,
    pub code: u32,
    pub debug: String,
}

/// What the server sent back, and when.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// The first GOAWAY.
    pub goaway: Option<GoAway>,
    /// How reading ended (EOF, or an error), when it did.
    pub closed: Option<String>,
    /// When the connection was first seen ending (a GOAWAY other than NO_ERROR-with-open-
    /// streams counts, and so does the end of reading): time since connecting, and frames
    /// the client had written by then.
    pub ended: Option<(Duration, u64)>,
    /// RST_STREAM frames received, by error code.
    pub resets: BTreeMap<String, u64>,
    /// Answers (HEADERS frames that opened a response), by `:status`.
    pub statuses: BTreeMap<String, u64>,
    /// The first thing that finished each stream from the server's side (an answer's status,
    /// or `RST <code>`), with its time; the first 64 streams only.
    pub stream_ends: BTreeMap<u32, (Duration, String)>,
    /// Whether the server's first SETTINGS has been received and acknowledged.
    pub settings_acked: bool,
    /// Frames received.
    pub frames_in: u64,
    /// DATA payload bytes received.
    pub data_in: u64,
}

impl Seen {
    /// Whether the server has finished `stream` (answered or reset it).
    pub fn stream_done(&self, stream: u32) -> bool {
        self.stream_ends.contains_key(&stream)
    }

    /// One line: how it ended and what came back.
    pub fn summary(&self) -> String {
        let mut s = match (&self.goaway, &self.closed) {
            (Some(g), _) => format!(
                "GOAWAY {} (last stream {}{})",
                code_name(g.code),
                g.last_stream,
                if g.debug.is_empty() {
                    String::new()
                } else {
                    format!(", {:?}", g.debug)
                }
            ),
            (None, Some(c)) => format!("closed without GOAWAY ({c})"),
            (None, None) => "connection still open".to_owned(),
        };
        if self.goaway.is_some()
            && let Some(c) = &self.closed
        {
            s.push_str(&format!(", then closed ({c})"));
        }
        if !self.statuses.is_empty() {
            s.push_str(&format!("; answers {:?}", self.statuses));
        }
        if !self.resets.is_empty() {
            s.push_str(&format!("; resets {:?}", self.resets));
        }
        s
    }
}

type Writer = WriteHalf<TlsStream<TcpStream>>;

/// One attacking connection: TLS (ALPN h2), the preface and SETTINGS written, a task reading
/// and recording the server's frames (it acknowledges SETTINGS and answers PINGs, as any
/// client library would, so that the server's keep-alive does not end the connection).
pub struct Conn {
    w: Arc<tokio::sync::Mutex<Writer>>,
    seen: Arc<Mutex<Seen>>,
    sent: Arc<AtomicU64>,
    t0: Instant,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Conn {
    /// Connects to `addr` with `tls` (whose ALPN must offer `h2`) and returns once the server's
    /// SETTINGS are acknowledged (so that no SETTINGS ACK lands inside a header block the
    /// caller sends later). Our SETTINGS disable push, open the flow-control windows wide, so
    /// that the answers never stall on them, and set the HPACK table size to 0, so that the
    /// server's encoder never refers to its dynamic table and each `:status` can be read.
    pub async fn open(addr: SocketAddr, tls: Arc<rustls::ClientConfig>) -> Result<Conn> {
        // A small send buffer, so that the frames written by the time the server's GOAWAY is
        // read are not mostly frames still queued in this socket.
        let sock = tokio::net::TcpSocket::new_v4()?;
        sock.set_send_buffer_size(64 * 1024)?;
        let tcp = tokio::time::timeout(Duration::from_secs(3), sock.connect(addr))
            .await
            .context("TCP connect timed out")??;
        tcp.set_nodelay(true)?;
        let name = rustls_pki_types::ServerName::IpAddress(addr.ip().into());
        let tls = tokio::time::timeout(
            Duration::from_secs(5),
            tokio_rustls::TlsConnector::from(tls).connect(name, tcp),
        )
        .await
        .context("TLS handshake timed out")?
        .context("TLS handshake")?;
        let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        ensure!(
            alpn.as_deref() == Some(b"h2".as_slice()),
            "ALPN chose {alpn:?}, not h2"
        );
        let (r, mut w) = tokio::io::split(tls);
        let mut hello = PREFACE.to_vec();
        let mut settings = Vec::new();
        for (id, v) in [(0x1u16, 0u32), (0x2, 0), (0x4, 0x7fff_ffff)] {
            // HEADER_TABLE_SIZE 0, ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 2^31-1
            settings.extend_from_slice(&id.to_be_bytes());
            settings.extend_from_slice(&v.to_be_bytes());
        }
        frame(&mut hello, kind::SETTINGS, 0, 0, &settings);
        frame(
            &mut hello,
            kind::WINDOW_UPDATE,
            0,
            0,
            &(0x7fff_ffff - 65_535u32).to_be_bytes(),
        );
        w.write_all(&hello).await?;
        w.flush().await?;
        let w = Arc::new(tokio::sync::Mutex::new(w));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let sent = Arc::new(AtomicU64::new(0));
        let t0 = Instant::now();
        let reader = tokio::spawn(read_frames(r, w.clone(), seen.clone(), sent.clone(), t0));
        let conn = Conn {
            w,
            seen,
            sent,
            t0,
            reader,
        };
        let ready = |s: &Seen| s.settings_acked || s.closed.is_some();
        ensure!(
            conn.wait_for(Duration::from_secs(5), ready).await && conn.seen().settings_acked,
            "no SETTINGS from the server within 5 s ({})",
            conn.seen().summary()
        );
        Ok(conn)
    }

    /// Writes `bytes` (holding `frames` frames) and flushes.
    pub async fn send(&self, bytes: &[u8], frames: u64) -> std::io::Result<()> {
        let mut w = self.w.lock().await;
        w.write_all(bytes).await?;
        w.flush().await?;
        self.sent.fetch_add(frames, Ordering::Relaxed);
        Ok(())
    }

    /// What the server has sent so far.
    pub fn seen(&self) -> Seen {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Frames written so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Time since the connection was opened.
    pub fn elapsed(&self) -> Duration {
        self.t0.elapsed()
    }

    /// Whether the connection has ended (see [`Seen::ended`]).
    pub fn ended(&self) -> bool {
        self.seen.lock().is_ok_and(|s| s.ended.is_some())
    }

    /// Waits at most `limit` for `done`.
    pub async fn wait_for(&self, limit: Duration, done: impl Fn(&Seen) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.seen.lock().is_ok_and(|s| done(&s)) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn read_frames(
    mut r: ReadHalf<TlsStream<TcpStream>>,
    w: Arc<tokio::sync::Mutex<Writer>>,
    seen: Arc<Mutex<Seen>>,
    sent: Arc<AtomicU64>,
    t0: Instant,
) {
    let end = |how: String| {
        if let Ok(mut s) = seen.lock() {
            s.closed = Some(how);
            if s.ended.is_none() {
                s.ended = Some((t0.elapsed(), sent.load(Ordering::Relaxed)));
            }
        }
    };
    let mut head = [0u8; 9];
    let mut payload = Vec::new();
    loop {
        if let Err(e) = r.read_exact(&mut head).await {
            end(if e.kind() == std::io::ErrorKind::UnexpectedEof {
                "EOF".to_owned()
            } else {
                e.to_string()
            });
            return;
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (ty, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        payload.resize(len, 0);
        if let Err(e) = r.read_exact(&mut payload).await {
            end(format!("mid-frame: {e}"));
            return;
        }
        let mut reply = Vec::new();
        let mut acks_settings = false;
        {
            let Ok(mut s) = seen.lock() else { return };
            s.frames_in += 1;
            let at = t0.elapsed();
            let finish = |s: &mut Seen, what: String| {
                if s.stream_ends.len() < 64 || s.stream_ends.contains_key(&stream) {
                    s.stream_ends.entry(stream).or_insert((at, what));
                }
            };
            match ty {
                kind::SETTINGS if flags & flag::ACK == 0 => {
                    frame(&mut reply, kind::SETTINGS, flag::ACK, 0, &[]);
                    acks_settings = true;
                }
                kind::PING if flags & flag::ACK == 0 => {
                    frame(&mut reply, kind::PING, flag::ACK, 0, &payload);
                }
                kind::GOAWAY if payload.len() >= 8 => {
                    let g = GoAway {
                        last_stream: u32::from_be_bytes([
                            payload[0], payload[1], payload[2], payload[3],
                        ]) & 0x7fff_ffff,
                        code: u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]),
                        debug: String::from_utf8_lossy(&payload[8..]).into_owned(),
                    };
                    // A graceful GOAWAY (NO_ERROR) lets open streams finish: the end is when
                    // the server closes. Any other code ends the connection now.
                    if g.code != code::NO_ERROR && s.ended.is_none() {
                        s.ended = Some((at, sent.load(Ordering::Relaxed)));
                    }
                    s.goaway.get_or_insert(g);
                }
                kind::RST_STREAM if payload.len() >= 4 => {
                    let c = code_name(u32::from_be_bytes([
                        payload[0], payload[1], payload[2], payload[3],
                    ]));
                    *s.resets.entry(c.clone()).or_default() += 1;
                    finish(&mut s, format!("RST {c}"));
                }
                kind::HEADERS => {
                    // The server sets neither PADDED nor PRIORITY.
                    if let Some(st) = hpack::status(&payload) {
                        *s.statuses.entry(st.clone()).or_default() += 1;
                        finish(&mut s, st);
                    }
                }
                kind::DATA => s.data_in += len as u64,
                _ => {}
            }
        }
        if !reply.is_empty() {
            let mut w = w.lock().await;
            // If the write side is gone, reading tells how the connection ended.
            let written = w.write_all(&reply).await.is_ok() && w.flush().await.is_ok();
            if written
                && acks_settings
                && let Ok(mut s) = seen.lock()
            {
                s.settings_acked = true;
            }
        }
    }
}

/// When an attack stops by itself, whatever the server does.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub frames: u64,
    pub time: Duration,
}

/// How an attack went.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Frames and bytes written in all.
    pub frames: u64,
    pub bytes: u64,
    /// How long it ran.
    pub elapsed: Duration,
    /// The write error that stopped it, if one did.
    pub write_error: Option<String>,
    /// Streams opened, when the caller counts them (0 otherwise).
    pub streams: u64,
    /// What the server sent (after a short wait for the connection's end).
    pub seen: Seen,
}

/// Writes batches from `next` (it appends frames to the buffer and returns how many; 0 ends
/// the attack) until `done` says so, the connection ends, a write fails, or `limit` is
/// reached; `pace` waits between batches. Then waits at most 1 s for the server to close.
pub async fn run(
    conn: &Conn,
    limit: Limit,
    pace: Option<Duration>,
    done: impl Fn(&Seen) -> bool,
    mut next: impl FnMut(u64, &mut Vec<u8>) -> u64,
) -> Outcome {
    let t0 = Instant::now();
    let (mut frames, mut bytes, mut write_error) = (0u64, 0u64, None);
    let mut buf = Vec::with_capacity(64 * 1024);
    let finished = |conn: &Conn| {
        conn.seen
            .lock()
            .is_ok_and(|s| s.ended.is_some() || done(&s))
    };
    for i in 0.. {
        if finished(conn) || frames >= limit.frames || t0.elapsed() >= limit.time {
            break;
        }
        buf.clear();
        let n = next(i, &mut buf);
        if n == 0 {
            break;
        }
        if let Err(e) = conn.send(&buf, n).await {
            write_error = Some(e.to_string());
            break;
        }
        frames += n;
        bytes += buf.len() as u64;
        if let Some(p) = pace {
            let until = Instant::now() + p;
            while Instant::now() < until && !finished(conn) && t0.elapsed() < limit.time {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    let elapsed = t0.elapsed();
    // A GOAWAY is followed by the close; a write error by the reader seeing it.
    conn.wait_for(Duration::from_secs(1), |s| s.closed.is_some())
        .await;
    Outcome {
        frames,
        bytes,
        elapsed,
        write_error,
        streams: 0,
        seen: conn.seen(),
    }
}

/// A rustls client configuration offering only `h2`, trusting `ca_pem`, with a client
/// certificate when one is given.
pub fn tls_config(
    ca_pem: &[u8],
    client: Option<(&[u8], &[u8])>,
) -> Result<Arc<rustls::ClientConfig>> {
    let cfg = paddock_pki::upstream_client_config(
        ca_pem,
        client.map(|c| c.0),
        client.map(|c| c.1),
        vec![b"h2".to_vec()],
    )
    .context("client TLS config")?;
    if cfg.alpn_protocols != [b"h2".to_vec()] {
        bail!("ALPN not set");
    }
    Ok(Arc::new(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_integers_are_laid_out_as_the_rfcs_say() {
        let mut b = Vec::new();
        frame(&mut b, kind::RST_STREAM, 0, 3, &code::CANCEL.to_be_bytes());
        assert_eq!(b, [0, 0, 4, 3, 0, 0, 0, 0, 3, 0, 0, 0, 8]);
        // RFC 7541 C.1.2: 1337 with a 5-bit prefix.
        let mut i = Vec::new();
        hpack::int(&mut i, 5, 0, 1337);
        assert_eq!(i, [31, 154, 10]);
        let mut blk = Vec::new();
        assert_eq!(header_block(&mut blk, 1, &[0u8; 40_000], true), 3);
        assert_eq!(blk[3..5], [kind::HEADERS, flag::END_STREAM]);
    }

    #[test]
    fn status_is_read_from_static_plain_and_huffman_forms() {
        assert_eq!(hpack::status(&[0x88]).as_deref(), Some("200"));
        assert_eq!(
            hpack::status(&[0x08, 3, b'4', b'0', b'1']).as_deref(),
            Some("401")
        );
        // "401" Huffman-coded: 011010 00000 00001, 16 bits, no padding.
        assert_eq!(
            hpack::status(&[0x48, 0x82, 0x68, 0x01]).as_deref(),
            Some("401")
        );
        // "431": 011010 011001 00001 + 7 bits of ones.
        assert_eq!(
            hpack::status(&[0x48, 0x83, 0x69, 0x90, 0xff]).as_deref(),
            Some("431")
        );
        assert_eq!(hpack::status(&[0xbe]).as_deref(), Some("dyn"));
    }
}
