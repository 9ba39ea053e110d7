//! The client against a scripted peer written with this module's own frame codec: GOAWAY,
//! resets, CONTINUATION, padding, PING, keep-alive, protocol errors.

use super::*;

/// A scripted peer: this module's frame codec on the server side.
struct Peer {
    io: DuplexStream,
    buf: BytesMut,
}

impl Peer {
    /// Reads the preface and sends SETTINGS with `params`.
    async fn accept(mut io: DuplexStream, params: Vec<(u16, u32)>) -> Peer {
        let mut preface = [0u8; 24];
        io.read_exact(&mut preface).await.unwrap();
        assert_eq!(&preface, PREFACE);
        let mut p = Peer {
            io,
            buf: BytesMut::new(),
        };
        p.send(Frame::Settings { ack: false, params }).await;
        p
    }

    async fn send(&mut self, f: Frame) {
        let mut out = Vec::new();
        f.encode(&mut out);
        self.io.write_all(&out).await.unwrap();
    }

    async fn send_raw(&mut self, raw: &[u8]) {
        self.io.write_all(raw).await.unwrap();
    }

    /// The next frame the client sent (None: it closed).
    async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(f) = frame::next(&mut self.buf, 1 << 24).unwrap() {
                return Some(f);
            }
            if within(self.io.read_buf(&mut self.buf)).await.unwrap() == 0 {
                return None;
            }
        }
    }

    /// Frames until one matching `want` (panics if the client closes first).
    async fn until(&mut self, want: impl Fn(&Frame) -> bool) -> Frame {
        loop {
            match self.next().await {
                Some(f) if want(&f) => return f,
                Some(_) => {}
                None => panic!("the client closed the connection"),
            }
        }
    }

    async fn headers(&mut self) -> u32 {
        match self.until(|f| matches!(f, Frame::Headers { .. })).await {
            Frame::Headers { stream, .. } => stream,
            _ => 0,
        }
    }
}

fn block(b: &'static [u8]) -> Bytes {
    Bytes::from_static(b)
}

/// `:status 200` (static index 8).
const OK: &[u8] = &[0x88];

fn pair() -> (SendRequest, DuplexStream) {
    let (ours, theirs) = tokio::io::duplex(1024 * 1024);
    (client(ours, cfg()), theirs)
}

#[tokio::test]
async fn a_goaway_fails_only_the_streams_above_its_last_id_as_not_processed() {
    let (send, io) = pair();
    let server = tokio::spawn(async move {
        let mut p = Peer::accept(io, vec![]).await;
        let (a, b) = (p.headers().await, p.headers().await);
        p.send(Frame::GoAway {
            last: a,
            code: 0,
            debug: Bytes::new(),
        })
        .await;
        let end = Frame::Headers {
            stream: a,
            end_stream: true,
            end_headers: true,
            block: block(OK),
        };
        p.send(end).await;
        (a, b, p)
    });
    let (s1, s2) = (send.clone(), send.clone());
    let first = tokio::spawn(async move {
        s1.send(&get("/a"), Bytes::new())
            .await
            .map(|r| r.0.status())
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = tokio::spawn(async move {
        s2.send(&get("/b"), Bytes::new())
            .await
            .map(|r| r.0.status())
    });
    let (a, b, _peer) = within(server).await.unwrap();
    assert!(a < b);
    assert_eq!(within(first).await.unwrap().unwrap(), 200);
    let e = within(second).await.unwrap().unwrap_err();
    assert!(not_processed(&e), "{e:?}");
    let e = send.clone().ready().await.err().unwrap();
    assert!(not_processed(&e), "after GOAWAY: {e:?}");
    let e = within(send.send(&get("/c"), Bytes::new()))
        .await
        .err()
        .unwrap();
    assert!(not_processed(&e), "opened after GOAWAY: {e:?}");
}

#[tokio::test]
async fn a_dropped_answer_is_cancelled_and_its_unread_window_given_back() {
    let mut c = cfg();
    c.stream_window = 65_535;
    c.conn_window = 65_535;
    let (ours, io) = tokio::io::duplex(1024 * 1024);
    let send = client(ours, c);
    let server = tokio::spawn(async move {
        let mut p = Peer::accept(io, vec![]).await;
        let id = p.headers().await;
        p.send(Frame::Headers {
            stream: id,
            end_stream: false,
            end_headers: true,
            block: block(OK),
        })
        .await;
        for n in [16_000, 16_000, 8_000] {
            let data = Bytes::from(vec![0u8; n]);
            p.send(Frame::Data {
                stream: id,
                end: false,
                data,
                flow: n,
            })
            .await;
        }
        let rst = p.until(|f| matches!(f, Frame::RstStream { .. })).await;
        assert_eq!(
            rst,
            Frame::RstStream {
                stream: id,
                code: frame::reason::CANCEL
            }
        );
        p.until(|f| matches!(f, Frame::WindowUpdate { stream: 0, .. }))
            .await
    });
    let (_, body) = within(send.send(&get("/a"), Bytes::new())).await.unwrap();
    // Let the data arrive, unread.
    while send
        .shared
        .lock()
        .streams
        .values()
        .map(|s| s.buffered)
        .sum::<usize>()
        < 40_000
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(body);
    let update = within(server).await.unwrap();
    assert_eq!(
        update,
        Frame::WindowUpdate {
            stream: 0,
            increment: 40_000
        }
    );
}

#[tokio::test]
async fn continuation_padding_ping_and_unknown_frames_are_read() {
    let (send, io) = pair();
    let server = tokio::spawn(async move {
        let mut p = Peer::accept(io, vec![(frame::MAX_CONCURRENT_STREAMS, 5)]).await;
        let id = p.headers().await;
        // :status 200, then `x-a: b` (literal, new name), split across HEADERS and CONTINUATION.
        let lit: &[u8] = &[0x00, 3, b'x', b'-', b'a', 1, b'b'];
        p.send(Frame::Unknown {
            kind: 0xbb,
            stream: id,
        })
        .await;
        p.send(Frame::Headers {
            stream: id,
            end_stream: false,
            end_headers: false,
            block: block(OK),
        })
        .await;
        p.send(Frame::Continuation {
            stream: id,
            end_headers: true,
            block: Bytes::from_static(lit),
        })
        .await;
        let mut raw = frame::head(6, frame::DATA, frame::PADDED | frame::END_STREAM, id).to_vec();
        raw.extend_from_slice(&[2, b'h', b'i', b'!', 0, 0]);
        p.send_raw(&raw).await;
        p.send(Frame::Ping {
            ack: false,
            payload: *b"pingpong",
        })
        .await;
        p.until(|f| matches!(f, Frame::Ping { ack: true, .. }))
            .await
    });
    let (head, mut body) = within(send.send(&get("/a"), Bytes::new())).await.unwrap();
    assert_eq!(head.headers()["x-a"], "b");
    assert_eq!(read_all(&mut body).await.unwrap(), b"hi!");
    assert_eq!(
        within(server).await.unwrap(),
        Frame::Ping {
            ack: true,
            payload: *b"pingpong"
        }
    );
    assert_eq!(send.shared.lock().max_concurrent, 5);
}

/// A peer that answers the first request's HEADERS with `raw`; the request must fail with
/// the connection, and the client must say GOAWAY with `code`.
async fn protocol_error(raw: Vec<u8>, code: u32) {
    let (send, io) = pair();
    let server = tokio::spawn(async move {
        let mut p = Peer::accept(io, vec![]).await;
        p.headers().await;
        p.send_raw(&raw).await;
        p.until(|f| matches!(f, Frame::GoAway { .. })).await
    });
    let e = within(send.send(&get("/a"), Bytes::new()))
        .await
        .err()
        .unwrap();
    assert!(matches!(e, Error::Closed(_)), "{e:?}");
    assert!(!not_processed(&e));
    match within(server).await.unwrap() {
        Frame::GoAway { code: c, .. } => assert_eq!(c, code),
        f => panic!("{f:?}"),
    }
    assert!(send.ready().await.is_err());
}

#[tokio::test]
async fn protocol_errors_close_the_connection_with_goaway() {
    use frame::reason::{COMPRESSION_ERROR, FRAME_SIZE_ERROR, PROTOCOL_ERROR};
    let mut push = Vec::new();
    Frame::PushPromise { stream: 1 }.encode(&mut push);
    protocol_error(push, PROTOCOL_ERROR).await;
    let mut cont = Vec::new();
    Frame::Continuation {
        stream: 1,
        end_headers: true,
        block: block(OK),
    }
    .encode(&mut cont);
    protocol_error(cont, PROTOCOL_ERROR).await;
    let mut idle = Vec::new();
    Frame::Headers {
        stream: 7,
        end_stream: true,
        end_headers: true,
        block: block(OK),
    }
    .encode(&mut idle);
    protocol_error(idle, PROTOCOL_ERROR).await;
    let mut bad_index = Vec::new();
    Frame::Headers {
        stream: 1,
        end_stream: true,
        end_headers: true,
        block: block(&[0xff, 0x10]),
    }
    .encode(&mut bad_index);
    protocol_error(bad_index, COMPRESSION_ERROR).await;
    let mut short_ping = frame::head(3, frame::PING, 0, 0).to_vec();
    short_ping.extend_from_slice(b"abc");
    protocol_error(short_ping, FRAME_SIZE_ERROR).await;
    protocol_error(
        frame::head(20_000, frame::DATA, 0, 1).to_vec(),
        FRAME_SIZE_ERROR,
    )
    .await;
}

#[tokio::test]
async fn refused_and_reset_streams_are_told_apart() {
    let (send, io) = pair();
    tokio::spawn(async move {
        let mut p = Peer::accept(io, vec![]).await;
        let a = p.headers().await;
        p.send(Frame::RstStream {
            stream: a,
            code: frame::reason::REFUSED_STREAM,
        })
        .await;
        let b = p.headers().await;
        p.send(Frame::RstStream {
            stream: b,
            code: frame::reason::INTERNAL_ERROR,
        })
        .await;
        let _ = p.next().await;
    });
    let e = within(send.send(&get("/a"), Bytes::new()))
        .await
        .err()
        .unwrap();
    assert!(not_processed(&e), "{e:?}");
    let e = within(send.send(&get("/b"), Bytes::new()))
        .await
        .err()
        .unwrap();
    assert!(!not_processed(&e), "{e:?}");
    assert_eq!(send.shared.lock().active, 0);
}

#[tokio::test]
async fn an_unanswered_keepalive_ping_closes_the_connection() {
    let mut c = cfg();
    c.keepalive_interval = Duration::from_millis(50);
    c.keepalive_timeout = Duration::from_millis(100);
    let (ours, io) = tokio::io::duplex(1024 * 1024);
    let send = client(ours, c);
    let server = tokio::spawn(async move {
        let mut p = Peer::accept(io, vec![]).await;
        let ping = p
            .until(|f| matches!(f, Frame::Ping { ack: false, .. }))
            .await;
        // Answer the first; ignore the rest.
        if let Frame::Ping { payload, .. } = ping {
            p.send(Frame::Ping { ack: true, payload }).await;
        }
        let mut pings = 1;
        while let Some(f) = p.next().await {
            pings += usize::from(matches!(f, Frame::Ping { ack: false, .. }));
        }
        pings
    });
    let pings = within(server).await.unwrap();
    assert_eq!(pings, 2, "one answered, the next unanswered, then closed");
    assert!(send.ready().await.is_err());
}

#[tokio::test]
async fn an_answer_head_past_its_deadline_cancels_the_stream_and_times_out() {
    let (send, io) = pair();
    let server = tokio::spawn(async move {
        let mut p = Peer::accept(io, vec![]).await;
        // The first request is never answered: the client cancels it at its deadline.
        let slow = p.headers().await;
        let rst = p.until(|f| matches!(f, Frame::RstStream { .. })).await;
        // The second is answered at once.
        let fast = p.headers().await;
        let ok = Frame::Headers {
            stream: fast,
            end_stream: true,
            end_headers: true,
            block: block(OK),
        };
        p.send(ok).await;
        (slow, rst, p)
    });
    let start = tokio::time::Instant::now();
    let deadline = start + Duration::from_millis(100);
    let Err(e) = within(send.send_until(&get("/slow"), Bytes::new(), deadline)).await else {
        panic!("answered past its deadline");
    };
    assert!(matches!(e, Error::TimedOut), "{e:?}");
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert!(
        !not_processed(&e),
        "a timed-out request may have been processed"
    );
    let later = tokio::time::Instant::now() + Duration::from_secs(30);
    let (resp, _) = within(send.send_until(&get("/fast"), Bytes::new(), later))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (slow, rst, _peer) = within(server).await.unwrap();
    match rst {
        Frame::RstStream { stream, code } => {
            assert_eq!(stream, slow);
            assert_eq!(code, reason::CANCEL);
        }
        other => panic!("{other:?}"),
    }
}

/// Issue 34: a header block with more distinct names than an `http::HeaderMap` holds
/// (24,576) within the header-list limit fails its stream (RST_STREAM PROTOCOL_ERROR, the
/// request sees `Malformed`), panics nothing, and leaves the connection usable.
#[tokio::test]
async fn more_distinct_header_names_than_a_header_map_holds_fail_the_stream() {
    const NAMES: usize = 30_000;
    let mut c = cfg();
    c.max_header_list = 4 * 1024 * 1024;
    let (ours, io) = tokio::io::duplex(1024 * 1024);
    let send = client(ours, c);
    let server = tokio::spawn(async move {
        let mut p = Peer::accept(io, vec![]).await;
        let id = p.headers().await;
        let mut raw = Vec::new();
        let start = frame::start_headers(&mut raw);
        raw.push(0x88);
        for i in 0..NAMES {
            // Literal without indexing, new name `x<i>`, empty value.
            raw.push(0x00);
            crate::hpack::put_str(&mut raw, format!("x{i}").as_bytes());
            crate::hpack::put_str(&mut raw, b"");
        }
        frame::finish_headers(&mut raw, start, id, true, frame::DEFAULT_MAX_FRAME);
        p.send_raw(&raw).await;
        let rst = p.until(|f| matches!(f, Frame::RstStream { .. })).await;
        let next = p.headers().await;
        p.send(Frame::Headers {
            stream: next,
            end_stream: true,
            end_headers: true,
            block: block(OK),
        })
        .await;
        (id, rst, p)
    });
    let e = within(send.send(&get("/many"), Bytes::new()))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&e, Error::Malformed(m) if m.contains("header map")),
        "{e:?}"
    );
    let (resp, _) = within(send.send(&get("/after"), Bytes::new()))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (id, rst, _peer) = within(server).await.unwrap();
    assert_eq!(
        rst,
        Frame::RstStream {
            stream: id,
            code: reason::PROTOCOL_ERROR
        }
    );
}
