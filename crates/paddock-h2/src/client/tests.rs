//! The client against an in-process `h2::server` over `tokio::io::duplex` (plumbing, flow
//! control, concurrency), and against a scripted peer written with this module's own frame
//! codec (GOAWAY, resets, CONTINUATION, padding, PING, protocol errors).
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::*;
use crate::frame::{self, Frame};

fn cfg() -> Config {
    Config {
        stream_window: 2 * 1024 * 1024,
        conn_window: 5 * 1024 * 1024,
        max_header_list: 1024 * 1024,
        keepalive_interval: Duration::from_secs(30),
        keepalive_timeout: Duration::from_secs(20),
    }
}

fn client(io: DuplexStream, cfg: Config) -> SendRequest {
    let (send, conn) = connect(io, cfg);
    tokio::spawn(conn);
    send
}

fn get(path: &str) -> Request<()> {
    Request::get(format!("https://upstream.test{path}"))
        .header("impersonate-user", "alice")
        .body(())
        .unwrap()
}

async fn read_all(r: &mut RecvStream) -> Result<Vec<u8>, Error> {
    let mut all = Vec::new();
    while let Some(d) = poll_fn(|cx| r.poll_data(cx)).await {
        all.extend_from_slice(&d?);
    }
    Ok(all)
}

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out")
}

/// An h2 server answering each request with `size` bytes, its path, the length of its
/// `x-big` header and of the body it read, and trailers; `max` streams at once, recording
/// the most seen in `peak`.
fn h2_server(io: DuplexStream, size: usize, max: u32, window: u32, peak: Arc<AtomicUsize>) {
    tokio::spawn(async move {
        let mut conn = h2::server::Builder::new()
            .max_concurrent_streams(max)
            .initial_window_size(window)
            .handshake::<_, Bytes>(io)
            .await
            .unwrap();
        let now = Arc::new(AtomicUsize::new(0));
        while let Some(Ok((req, mut respond))) = conn.accept().await {
            let (now, peak) = (now.clone(), peak.clone());
            tokio::spawn(async move {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(n, Ordering::SeqCst);
                let path = req.uri().path().to_owned();
                let big = req.headers().get("x-big").map_or(0, |v| v.len());
                let mut body = req.into_body();
                let mut got = 0;
                while let Some(Ok(d)) = body.data().await {
                    got += d.len();
                    let _ = body.flow_control().release_capacity(d.len());
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                let resp = Response::builder()
                    .status(201)
                    .header("x-path", path)
                    .header("x-got", got.to_string())
                    .header("x-big", big.to_string())
                    .body(())
                    .unwrap();
                let mut send = respond.send_response(resp, false).unwrap();
                send.send_data(Bytes::from(vec![b'x'; size]), false)
                    .unwrap();
                let mut t = HeaderMap::new();
                t.insert("x-trailer", "done".parse().unwrap());
                send.send_trailers(t).unwrap();
            });
        }
    });
}

fn h2_pair(size: usize, max: u32, window: u32) -> (SendRequest, Arc<AtomicUsize>) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let peak = Arc::new(AtomicUsize::new(0));
    h2_server(theirs, size, max, window, peak.clone());
    (client(ours, cfg()), peak)
}

#[tokio::test]
async fn a_small_get_gets_its_head_body_and_trailers_twice() {
    let (send, _) = h2_pair(300, 100, 65_535);
    for path in ["/api/v1/namespaces/a/pods/p", "/api/v1/namespaces/b/pods/q"] {
        let (head, mut body) = within(send.send(&get(path), Bytes::new())).await.unwrap();
        assert_eq!(head.status(), 201);
        assert_eq!(head.headers()["x-path"], path);
        assert_eq!(read_all(&mut body).await.unwrap(), vec![b'x'; 300]);
        assert_eq!(body.take_trailers().unwrap()["x-trailer"], "done");
        assert!(body.is_end_stream());
    }
}

#[tokio::test]
async fn an_answer_of_3_mib_flows_through_the_windows() {
    let size = 3 * 1024 * 1024;
    let (send, _) = h2_pair(size, 100, 65_535);
    for _ in 0..3 {
        let (_, mut body) = within(send.send(&get("/big"), Bytes::new())).await.unwrap();
        assert_eq!(within(read_all(&mut body)).await.unwrap().len(), size);
    }
}

#[tokio::test]
async fn a_body_larger_than_the_peers_windows_and_a_head_larger_than_a_frame_are_sent_whole() {
    let (send, _) = h2_pair(0, 100, 16_384);
    let body = Bytes::from(vec![7u8; 1024 * 1024 + 17]);
    let mut head = Request::post("https://upstream.test/api/v1/namespaces")
        .body(())
        .unwrap();
    head.headers_mut()
        .insert("x-big", "b".repeat(40_000).parse().unwrap());
    let (resp, _) = within(send.send(&head, body)).await.unwrap();
    assert_eq!(resp.headers()["x-got"], (1024 * 1024 + 17).to_string());
    assert_eq!(resp.headers()["x-big"], "40000");
}

#[tokio::test]
async fn a_hundred_requests_wait_for_the_peers_ten_slots() {
    let (send, peak) = h2_pair(10, 10, 65_535);
    // The first answer brings the peer's SETTINGS (before them, 100 streams are allowed).
    within(send.send(&get("/first"), Bytes::new()))
        .await
        .unwrap();
    let mut all = tokio::task::JoinSet::new();
    for i in 0..100 {
        let send = send.clone();
        all.spawn(async move {
            let (h, mut b) = send.send(&get(&format!("/{i}")), Bytes::new()).await?;
            assert_eq!(h.headers()["x-path"], format!("/{i}").as_str());
            read_all(&mut b).await
        });
    }
    let mut n = 0;
    while let Some(r) = within(all.join_next()).await {
        assert_eq!(r.unwrap().unwrap().len(), 10);
        n += 1;
    }
    assert_eq!(n, 100);
    assert!(
        peak.load(Ordering::SeqCst) <= 10,
        "{}",
        peak.load(Ordering::SeqCst)
    );
    assert_eq!(send.shared.lock().active, 0);
}

#[path = "peer_tests.rs"]
mod peer;
