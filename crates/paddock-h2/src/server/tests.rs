//! The server against the h2 crate's client (an independent implementation) over an
//! in-process pipe, and against scripted frames for what a well-behaved client never sends.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use http_body::Body as _;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::*;
use crate::frame::{self, Frame, reason};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type TestBody = BoxBody<Bytes, BoxError>;

fn full(b: impl Into<Bytes>) -> TestBody {
    Full::new(b.into()).map_err(|e| match e {}).boxed()
}

/// Set when the body of `/forever` is dropped.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[derive(Clone, Default)]
struct Echo {
    forever_dropped: Arc<AtomicBool>,
    spawned: Arc<AtomicUsize>,
}

impl Service for Echo {
    type Body = TestBody;
    type Future = Pin<Box<dyn Future<Output = Response<TestBody>> + Send>>;

    fn call(&mut self, req: Request<RecvBody>) -> (Self::Future, Placement) {
        let placement = if req.uri().path().starts_with("/spawn") {
            Placement::Spawn
        } else {
            Placement::Inline
        };
        let dropped = self.forever_dropped.clone();
        let fut = Box::pin(async move {
            let path = req.uri().path().trim_start_matches("/spawn").to_owned();
            let query = req.uri().query().unwrap_or("").to_owned();
            match path.as_str() {
                "/echo" => {
                    let hint = req.body().size_hint().exact();
                    match req.into_body().collect().await {
                        Ok(b) => {
                            let b = b.to_bytes();
                            Response::builder()
                                .header("x-hint", format!("{hint:?}"))
                                .body(full(format!(
                                    "{} {}",
                                    b.len(),
                                    b.iter().map(|x| u64::from(*x)).sum::<u64>()
                                )))
                                .unwrap()
                        }
                        Err(e) => Response::builder()
                            .status(400)
                            .body(full(e.to_string()))
                            .unwrap(),
                    }
                }
                "/big" => {
                    let n: usize = query.parse().unwrap();
                    let chunks = (0..n / 10_000).map(|i| {
                        Ok::<_, BoxError>(http_body::Frame::data(Bytes::from(vec![
                            (i % 251) as u8;
                            10_000
                        ])))
                    });
                    let s = futures_util::stream::iter(chunks);
                    Response::new(StreamBody::new(s).boxed())
                }
                "/forever" => {
                    let guard = Dropped(dropped);
                    let s = futures_util::stream::unfold(Some(guard), |g| async move {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        Some((
                            Ok::<_, BoxError>(http_body::Frame::data(Bytes::from_static(
                                b"tick\n",
                            ))),
                            g,
                        ))
                    });
                    Response::new(StreamBody::new(s).boxed())
                }
                "/hold" => {
                    // Holds the request body unread, and never answers.
                    let _body = req.into_body();
                    std::future::pending::<Response<TestBody>>().await
                }
                "/empty" => Response::builder()
                    .status(204)
                    .body(full(Bytes::new()))
                    .unwrap(),
                _ => Response::builder()
                    .header("content-type", "text/plain")
                    .body(full(format!("{} {}", req.method(), req.uri())))
                    .unwrap(),
            }
        });
        (fut, placement)
    }

    fn spawn(&self, work: Pin<Box<dyn Future<Output = ()> + Send>>) {
        self.spawned.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(work);
    }
}

fn config() -> Config {
    Config {
        stream_window: 1 << 20,
        conn_window: 1 << 20,
        max_concurrent_streams: 100,
        max_header_list: 16 * 1024,
        keepalive_interval: Some(Duration::from_secs(30)),
        keepalive_timeout: Duration::from_secs(20),
    }
}

/// A server on one end of a pipe (its task spawned; its result on the handle) and the h2
/// crate's client on the other.
async fn pair(
    svc: Echo,
) -> (
    h2::client::SendRequest<Bytes>,
    tokio::task::JoinHandle<Result<(), Error>>,
) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(Connection::new(ours, config(), svc));
    let (send, conn) = h2::client::handshake(theirs).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    (send, server)
}

async fn get(
    send: &mut h2::client::SendRequest<Bytes>,
    path: &str,
) -> (http::StatusCode, HeaderMapAndBody) {
    let req = Request::get(format!("https://paddock.test{path}"))
        .body(())
        .unwrap();
    let (resp, _) = send
        .clone()
        .ready()
        .await
        .unwrap()
        .send_request(req, true)
        .unwrap();
    let resp = resp.await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    (status, (headers, read_all(resp.into_body()).await.unwrap()))
}

/// An answer's body, its window given back as it is read.
async fn read_all(mut body: h2::RecvStream) -> Result<Vec<u8>, h2::Error> {
    let mut got = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        body.flow_control().release_capacity(chunk.len())?;
        got.extend_from_slice(&chunk);
    }
    Ok(got)
}

type HeaderMapAndBody = (http::HeaderMap, Vec<u8>);

#[tokio::test]
async fn answers_requests_inline_and_spawned() {
    let svc = Echo::default();
    let spawned = svc.spawned.clone();
    let (mut send, _server) = pair(svc).await;
    let (status, (headers, body)) = get(&mut send, "/a/b?c=d").await;
    assert_eq!(status, 200);
    assert_eq!(body, b"GET https://paddock.test/a/b?c=d");
    assert_eq!(headers["content-type"], "text/plain");
    assert!(headers.contains_key("date"), "a Date header is added");
    let (status, (_, body)) = get(&mut send, "/spawn/x").await;
    assert_eq!(
        (status.as_u16(), body.as_slice()),
        (200, &b"GET https://paddock.test/spawn/x"[..])
    );
    assert_eq!(spawned.load(Ordering::SeqCst), 1);
    let (status, (_, body)) = get(&mut send, "/empty").await;
    assert_eq!((status.as_u16(), body.len()), (204, 0));
}

#[tokio::test]
async fn large_answers_follow_the_clients_windows() {
    let (mut send, _server) = pair(Echo::default()).await;
    // 3 MB against the h2 client's 64 KiB windows: only sendable as the client gives back.
    for path in ["/big?3000000", "/spawn/big?3000000"] {
        let (status, (_, body)) = get(&mut send, path).await;
        assert_eq!(status, 200);
        assert_eq!(body.len(), 3_000_000);
        assert!(
            body.chunks(10_000)
                .enumerate()
                .all(|(i, c)| c.iter().all(|b| *b == (i % 251) as u8))
        );
    }
}

#[tokio::test]
async fn request_bodies_larger_than_the_windows_arrive_whole() {
    let (send, _server) = pair(Echo::default()).await;
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 199) as u8).collect();
    let sum: u64 = body.iter().map(|b| u64::from(*b)).sum();
    let req = Request::post("https://paddock.test/echo")
        .header("content-length", body.len().to_string())
        .body(())
        .unwrap();
    let (resp, mut stream) = send
        .ready()
        .await
        .unwrap()
        .send_request(req, false)
        .unwrap();
    let mut rest = Bytes::from(body);
    while !rest.is_empty() {
        stream.reserve_capacity(rest.len().min(1 << 16));
        let cap = std::future::poll_fn(|cx| stream.poll_capacity(cx))
            .await
            .unwrap()
            .unwrap();
        let chunk = rest.split_to(cap.min(rest.len()));
        stream.send_data(chunk, rest.is_empty()).unwrap();
    }
    let resp = resp.await.unwrap();
    assert_eq!(resp.headers()["x-hint"], "Some(3000000)");
    let got = read_all(resp.into_body()).await.unwrap();
    assert_eq!(got, format!("3000000 {sum}").into_bytes());
}

#[tokio::test]
async fn many_concurrent_streams() {
    let (send, _server) = pair(Echo::default()).await;
    let mut all = Vec::new();
    for i in 0..60 {
        let mut send = send.clone();
        all.push(tokio::spawn(async move {
            let path = if i % 3 == 0 {
                format!("/spawn/n{i}")
            } else {
                format!("/n{i}")
            };
            let (status, (_, body)) = get(&mut send, &path).await;
            assert_eq!(status, 200);
            assert_eq!(body, format!("GET https://paddock.test{path}").into_bytes());
        }));
    }
    for t in all {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn a_reset_stream_drops_its_never_ending_body() {
    for path in ["/forever", "/spawn/forever"] {
        let svc = Echo::default();
        let dropped = svc.forever_dropped.clone();
        let (send, _server) = pair(svc).await;
        let req = Request::get(format!("https://paddock.test{path}"))
            .body(())
            .unwrap();
        let (resp, _) = send.ready().await.unwrap().send_request(req, true).unwrap();
        let mut body = resp.await.unwrap().into_body();
        let first = body.data().await.unwrap().unwrap();
        assert_eq!(&first[..], b"tick\n");
        assert!(!dropped.load(Ordering::SeqCst));
        drop(body); // the h2 client resets the stream (CANCEL)
        for _ in 0..100 {
            if dropped.load(Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            dropped.load(Ordering::SeqCst),
            "{path}: the body was let go"
        );
    }
}

#[tokio::test]
async fn graceful_shutdown_finishes_streams_in_progress() {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let mut conn = Connection::new(ours, config(), Echo::default());
    let (send, client) = h2::client::handshake(theirs).await.unwrap();
    tokio::spawn(async move {
        let _ = client.await;
    });
    let req = Request::get("https://paddock.test/spawn/big?200000")
        .body(())
        .unwrap();
    let (resp, _) = send.ready().await.unwrap().send_request(req, true).unwrap();
    // Serve until the answer's head is out, then say GOAWAY.
    let resp = tokio::select! {
        r = resp => r.unwrap(),
        _ = &mut conn => panic!("ended early"),
    };
    conn.graceful_shutdown();
    let reading = tokio::spawn(async move { read_all(resp.into_body()).await.map(|b| b.len()) });
    let ended = tokio::time::timeout(Duration::from_secs(5), conn).await;
    assert!(matches!(ended, Ok(Ok(()))), "{ended:?}");
    assert_eq!(reading.await.unwrap().unwrap(), 200_000);
}

#[tokio::test]
async fn an_oversized_header_list_is_answered_431() {
    let (mut send, _server) = pair(Echo::default()).await;
    let req = Request::get("https://paddock.test/x")
        .header("x-big", "v".repeat(20_000))
        .body(())
        .unwrap();
    let (resp, _) = send
        .clone()
        .ready()
        .await
        .unwrap()
        .send_request(req, true)
        .unwrap();
    assert_eq!(resp.await.unwrap().status(), 431);
    // The HPACK tables stayed in step: the connection still serves.
    let (status, _) = get(&mut send, "/after").await;
    assert_eq!(status, 200);
}

/// Scripted client: the preface and SETTINGS, then `frames`; returns what the server sent.
async fn scripted(frames: &[Frame], extra: &[u8]) -> Vec<Frame> {
    let (ours, mut theirs) = tokio::io::duplex(1 << 20);
    let server = tokio::spawn(Connection::new(ours, config(), Echo::default()));
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    Frame::Settings {
        ack: false,
        params: vec![],
    }
    .encode(&mut out);
    for f in frames {
        f.encode(&mut out);
    }
    out.extend_from_slice(extra);
    theirs.write_all(&out).await.unwrap();
    let got = read_frames(&mut theirs).await;
    drop(theirs);
    let _ = tokio::time::timeout(Duration::from_secs(2), server).await;
    got
}

async fn read_frames(io: &mut DuplexStream) -> Vec<Frame> {
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    loop {
        while let Ok(Some(f)) = frame::next(&mut buf, 1 << 24) {
            got.push(f);
        }
        match tokio::time::timeout(Duration::from_millis(300), io.read_buf(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return got,
        }
    }
}

/// A request header block (literal fields, no indexing) for the scripted client.
fn block(fields: &[(&str, &str)]) -> Bytes {
    let mut out = Vec::new();
    for (n, v) in fields {
        out.push(0x00);
        crate::hpack::put_str(&mut out, n.as_bytes());
        crate::hpack::put_str(&mut out, v.as_bytes());
    }
    Bytes::from(out)
}

fn headers(stream: u32, fields: &[(&str, &str)]) -> Frame {
    Frame::Headers {
        stream,
        end_stream: true,
        end_headers: true,
        block: block(fields),
    }
}

const GET: [(&str, &str); 3] = [(":method", "GET"), (":scheme", "https"), (":path", "/x")];

fn resets(got: &[Frame]) -> Vec<(u32, u32)> {
    got.iter()
        .filter_map(|f| match f {
            Frame::RstStream { stream, code } => Some((*stream, *code)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn malformed_requests_are_reset_and_the_connection_goes_on() {
    let got = scripted(
        &[
            headers(1, &[(":method", "GET"), (":scheme", "https")]),
            headers(3, &[GET[0], GET[1], GET[2], ("connection", "close")]),
            headers(5, &[GET[0], GET[1], GET[2], (":bogus", "x")]),
            headers(7, &[GET[0], GET[1], ("x-a", "b"), GET[2]]),
            headers(9, &[GET[0], GET[1], GET[2], ("content-length", "5")]),
            headers(11, &GET),
        ],
        &[],
    )
    .await;
    let want: Vec<(u32, u32)> = [1, 3, 5, 7, 9]
        .iter()
        .map(|s| (*s, reason::PROTOCOL_ERROR))
        .collect();
    assert_eq!(resets(&got), want);
    let answered = got
        .iter()
        .any(|f| matches!(f, Frame::Headers { stream: 11, .. }));
    assert!(answered, "the well-formed request is answered: {got:?}");
}

#[tokio::test]
async fn protocol_errors_end_the_connection_with_goaway() {
    // An even stream id.
    let got = scripted(&[headers(2, &GET)], &[]).await;
    assert!(
        got.iter().any(|f| matches!(
            f,
            Frame::GoAway {
                code: reason::PROTOCOL_ERROR,
                ..
            }
        )),
        "{got:?}"
    );
    // DATA beyond the connection window (1 MiB), on an open stream.
    let open = Frame::Headers {
        stream: 1,
        end_stream: false,
        end_headers: true,
        block: block(&[
            (":method", "POST"),
            (":scheme", "https"),
            (":path", "/hold"),
        ]),
    };
    let mut frames = vec![open];
    for _ in 0..70 {
        frames.push(Frame::Data {
            stream: 1,
            end: false,
            data: Bytes::from(vec![0; 16_000]),
            flow: 16_000,
        });
    }
    let got = scripted(&frames, &[]).await;
    assert!(
        got.iter().any(|f| matches!(
            f,
            Frame::GoAway {
                code: reason::FLOW_CONTROL_ERROR,
                ..
            }
        )),
        "{:?}",
        got.iter()
            .filter(|f| !matches!(f, Frame::Data { .. }))
            .collect::<Vec<_>>()
    );
    // Not the preface at all.
    let (ours, mut theirs) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(Connection::new(ours, config(), Echo::default()));
    theirs
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let got = read_frames(&mut theirs).await;
    assert!(
        got.iter().any(|f| matches!(f, Frame::GoAway { .. })),
        "{got:?}"
    );
    let ended = tokio::time::timeout(Duration::from_secs(2), server)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(ended, Err(Error::Protocol(_))), "{ended:?}");
}

#[tokio::test]
async fn streams_over_the_limit_are_refused() {
    let open = |id| Frame::Headers {
        stream: id,
        end_stream: false,
        end_headers: true,
        block: block(&[
            (":method", "POST"),
            (":scheme", "https"),
            (":path", "/echo"),
        ]),
    };
    let frames: Vec<Frame> = (0..101).map(|i| open(2 * i + 1)).collect();
    let got = scripted(&frames, &[]).await;
    assert_eq!(resets(&got), vec![(201, reason::REFUSED_STREAM)]);
}

#[tokio::test]
async fn a_client_that_does_not_read_is_not_read_either() {
    // 40 MB of PINGs, each asking for an ACK, from a client that reads nothing: the server
    // stops reading once about 1 MiB of answers wait, so the client's writes stall.
    let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
    let _server = tokio::spawn(Connection::new(ours, config(), Echo::default()));
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    Frame::Settings {
        ack: false,
        params: vec![],
    }
    .encode(&mut out);
    for _ in 0..2_000_000 {
        Frame::Ping {
            ack: false,
            payload: *b"12345678",
        }
        .encode(&mut out);
    }
    let wrote = tokio::time::timeout(Duration::from_secs(2), theirs.write_all(&out)).await;
    assert!(
        wrote.is_err(),
        "the server kept reading a client that does not read"
    );
    // Reading lets it go on: the queued ACKs come.
    let mut buf = BytesMut::new();
    let mut acks = 0usize;
    while acks < 1000 {
        theirs.read_buf(&mut buf).await.unwrap();
        while let Ok(Some(f)) = frame::next(&mut buf, 1 << 24) {
            if matches!(f, Frame::Ping { ack: true, .. }) {
                acks += 1;
            }
        }
    }
}
