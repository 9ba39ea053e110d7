//! The yield lane: the answer whole, the work on the lane's threads at a lower priority, the
//! I/O context the main runtime's, and nothing left behind when the client goes away.

#![allow(clippy::unwrap_used)]
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Response};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};

use super::*;

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}

fn nice() -> i32 {
    rustix::process::getpriority_process(None).unwrap()
}

#[tokio::test]
async fn an_offloaded_answer_arrives_whole_its_work_on_the_lane_its_io_on_main() {
    let lane = YieldLane::start(1).unwrap();
    let (main_thread, main_nice) = (thread_name(), nice());
    let offloaded = lane.offload(async {
        let polled_on = (thread_name(), nice());
        // A task spawned by the request (hyper's connection task, say) goes to the main
        // runtime, and a timer is the main runtime's: the test's runtime drives both.
        let spawned_on = tokio::spawn(async { thread_name() }).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        let mut trailers = HeaderMap::new();
        trailers.insert("x-end", "yes".parse().unwrap());
        let frames: Vec<Result<Frame<Bytes>, BoxError>> = vec![
            Ok(Frame::data(Bytes::from(format!(
                "{}|{}|",
                polled_on.0, polled_on.1
            )))),
            Ok(Frame::data(Bytes::from(spawned_on))),
            Ok(Frame::trailers(trailers)),
        ];
        let body = ResBody::boxed(StreamBody::new(futures_util::stream::iter(frames)));
        Ok(Response::builder().status(201).body(body).unwrap())
    });
    let resp = tokio::time::timeout(Duration::from_secs(30), offloaded)
        .await
        .expect("no answer from the lane")
        .unwrap();
    assert_eq!(resp.status(), 201);
    let collected = resp.into_body().collect().await.unwrap();
    assert_eq!(collected.trailers().unwrap()["x-end"], "yes");
    let text = String::from_utf8(collected.to_bytes().to_vec()).unwrap();
    let parts: Vec<&str> = text.split('|').collect();
    assert_eq!(
        parts[0], "paddock-lane",
        "the request was not polled on the lane"
    );
    let lane_nice: i32 = parts[1].parse().unwrap();
    assert_eq!(
        lane_nice,
        (main_nice + LANE_NICE).min(19),
        "the lane's priority"
    );
    assert_eq!(
        parts[2], main_thread,
        "a spawned task left the main runtime"
    );
}

#[tokio::test]
async fn an_error_is_answered_and_a_dropped_answer_stops_the_work() {
    let lane = YieldLane::start(1).unwrap();
    let refused = lane.offload(async { Err(ServerError::BadRequest("no".into())) });
    assert!(matches!(refused.await, Err(ServerError::BadRequest(_))));

    // An answer whose body never ends holds a guard (in paddock: its seats and slot).
    struct Guard(Option<tokio::sync::oneshot::Sender<()>>);
    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(tx) = self.0.take() {
                let _ = tx.send(());
            }
        }
    }
    let (dropped_tx, dropped) = tokio::sync::oneshot::channel();
    let guard = Guard(Some(dropped_tx));
    let endless = lane.offload(async move {
        let frames = futures_util::stream::unfold(guard, |g| async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Some((Ok::<_, BoxError>(Frame::data(Bytes::from_static(b"x"))), g))
        });
        Ok(Response::new(ResBody::boxed(StreamBody::new(frames))))
    });
    let mut body = endless.await.unwrap().into_body();
    assert!(body.frame().await.unwrap().unwrap().is_data());
    drop(body);
    tokio::time::timeout(Duration::from_secs(30), dropped)
        .await
        .expect("the lane's task kept the request after its answer was dropped")
        .unwrap();
}
