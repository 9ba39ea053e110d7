//! A watch of the load's objects, resumed from its last resourceVersion when it ends (cleanly,
//! with an ERROR event, or with a broken connection), as client-go's reflector does; it stops
//! once it has seen the final state upstream.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;

use super::call::{Caller, call, fail, note_latency};
use super::report::{FailedRequest, WatchLog};
use super::verify::target_reached;
use super::{RUN_LABEL, Shared, Spec, TenantLoad};
use crate::http::{Failure, Tls};

pub(super) async fn watch_loop(
    tls: Tls,
    t: TenantLoad,
    spec: Spec,
    shared: Arc<Shared>,
    t0: Instant,
    _w: usize,
) -> WatchLog {
    let base = format!(
        "/api/v1/namespaces/{}/configmaps?labelSelector={RUN_LABEL}%3D{}",
        t.namespace, spec.run
    );
    let mut log = WatchLog::default();
    let mut rv: Option<String> = None;
    let mut started = false;
    let c = Caller {
        tls: &tls,
        shared: &shared,
        t0,
        spec: &spec,
    };
    loop {
        if shared.stop_watches.load(Ordering::Acquire) {
            return log;
        }
        if shared.writes_done.load(Ordering::Acquire)
            && target_reached(&shared, &t.tenant, &log.seen)
        {
            return log;
        }
        let Some(from) = rv.clone() else {
            // (Re-)list.
            match call(&c, Method::GET, &base, None, StatusCode::OK).await {
                Ok(b) => {
                    let v: Value = serde_json::from_slice(&b).unwrap_or(Value::Null);
                    log.seen.clear();
                    for item in v["items"].as_array().cloned().unwrap_or_default() {
                        if let (Some(n), Some(r)) = (
                            item["metadata"]["name"].as_str(),
                            item["metadata"]["resourceVersion"].as_str(),
                        ) {
                            log.seen.insert(n.to_owned(), r.to_owned());
                        }
                    }
                    rv = v["metadata"]["resourceVersion"].as_str().map(str::to_owned);
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
            continue;
        };
        if started {
            log.resumes += 1;
        }
        started = true;
        shared.requests.fetch_add(1, Ordering::AcqRel);
        let path = format!("{base}&watch=1&resourceVersion={from}&timeoutSeconds=300");
        let at = t0.elapsed();
        let started = Instant::now();
        let sent = tokio::time::timeout(spec.request_timeout, tls.start(Method::GET, &path, None))
            .await
            .unwrap_or(Err(Failure::Timeout));
        let latency = started.elapsed();
        note_latency(&shared, latency);
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                // Retried below like any re-watch; a request that never got an answer counts.
                if !matches!(e, Failure::NotProcessed(_)) {
                    fail(
                        &shared,
                        FailedRequest {
                            at,
                            latency,
                            status: None,
                            what: format!("WATCH {path}: {e}"),
                            body: String::new(),
                        },
                    );
                } else {
                    tls.retries.fetch_add(1, Ordering::Relaxed);
                    shared.requests.fetch_sub(1, Ordering::AcqRel);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if resp.status() != StatusCode::OK {
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            if status == StatusCode::GONE {
                log.relists += 1;
                rv = None;
            } else {
                fail(
                    &shared,
                    FailedRequest {
                        at,
                        latency,
                        status: Some(status.as_u16()),
                        what: format!("WATCH {path}: {status}"),
                        body: String::from_utf8_lossy(&body).into_owned(),
                    },
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            continue;
        }
        let mut body = resp.into_body();
        let mut buf: Vec<u8> = Vec::new();
        'stream: loop {
            if shared.stop_watches.load(Ordering::Acquire)
                || (shared.writes_done.load(Ordering::Acquire)
                    && target_reached(&shared, &t.tenant, &log.seen))
            {
                return log;
            }
            let frame = match tokio::time::timeout(Duration::from_millis(500), body.frame()).await {
                Err(_) => continue,
                Ok(None) => break 'stream,
                Ok(Some(Err(_))) => break 'stream,
                Ok(Some(Ok(f))) => f,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buf.extend_from_slice(&data);
            while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).collect();
                let Ok(ev) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                if apply_event(&mut log, &mut rv, &ev) {
                    break 'stream;
                }
            }
        }
    }
}

/// Takes one watch event into `log` and the resourceVersion to resume from; true when the
/// stream must end (an ERROR event: the watch starts again, or re-lists after a 410).
fn apply_event(log: &mut WatchLog, rv: &mut Option<String>, ev: &Value) -> bool {
    let obj = &ev["object"];
    match ev["type"].as_str().unwrap_or("") {
        "ADDED" | "MODIFIED" => {
            log.events += 1;
            if let (Some(n), Some(r)) = (
                obj["metadata"]["name"].as_str(),
                obj["metadata"]["resourceVersion"].as_str(),
            ) {
                log.seen.insert(n.to_owned(), r.to_owned());
                *rv = Some(r.to_owned());
            }
        }
        "DELETED" => {
            log.events += 1;
            if let Some(n) = obj["metadata"]["name"].as_str() {
                log.seen.remove(n);
            }
            *rv = obj["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_owned)
                .or(rv.take());
        }
        "BOOKMARK" => {
            *rv = obj["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_owned)
                .or(rv.take());
        }
        "ERROR" => {
            log.error_events += 1;
            if log.error_messages.len() < 5 {
                log.error_messages
                    .push(obj["message"].as_str().unwrap_or("").to_owned());
            }
            if obj["code"] == 410 {
                log.relists += 1;
                *rv = None;
            }
            return true;
        }
        _ => {}
    }
    false
}
