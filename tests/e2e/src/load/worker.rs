//! A writer and reader of the load: creates with `generateName` and a unique `seq` label,
//! merge patches of its own objects (`data.n` counts up), GETs of its own objects and LISTs of
//! the load's; what was acknowledged goes to the shared record the verdict compares with.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::call::{Caller, Missed, call};
use super::{RUN_LABEL, Shared, Spec, TenantLoad};
use crate::http::Tls;

pub(super) async fn worker(
    tls: Tls,
    t: TenantLoad,
    spec: Spec,
    shared: Arc<Shared>,
    t0: Instant,
    w: usize,
) {
    let base = format!("/api/v1/namespaces/{}/configmaps", t.namespace);
    let mut mine: Vec<String> = Vec::new();
    let mut counters: BTreeMap<String, u64> = BTreeMap::new();
    let mut i: u64 = 0;
    let c = Caller {
        tls: &tls,
        shared: &shared,
        t0,
        spec: &spec,
    };
    while t0.elapsed() < spec.duration
        && shared.requests.load(Ordering::Acquire) < spec.max_requests
    {
        let op = if mine.is_empty() { 0 } else { i % 4 };
        match op {
            0 => {
                let seq = format!("{}-{w}-{i}", t.tenant);
                let obj = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"generateName": "load-", "labels": {RUN_LABEL: spec.run, "seq": seq}},
                    "data": {"n": "0"}
                });
                let body = serde_json::to_vec(&obj).unwrap_or_default();
                match call(
                    &c,
                    Method::POST,
                    &base,
                    Some(("application/json", body)),
                    StatusCode::CREATED,
                )
                .await
                {
                    Ok(b) => {
                        let name = serde_json::from_slice::<Value>(&b)
                            .ok()
                            .and_then(|v| v["metadata"]["name"].as_str().map(str::to_owned))
                            .unwrap_or_default();
                        shared.acked_creates.lock().insert(seq, name.clone());
                        mine.push(name);
                    }
                    // No answer, or a timeout answer (504: the upstream may have applied it
                    // after all): unknown. Any other answer means not created.
                    Err(Missed::NoAnswer | Missed::Status(504)) => {
                        shared.unknown_creates.lock().insert(seq);
                    }
                    Err(Missed::Status(_)) => {}
                }
            }
            1 => {
                let name = &mine[(i as usize / 4) % mine.len()];
                let _ = call(
                    &c,
                    Method::GET,
                    &format!("{base}/{name}"),
                    None,
                    StatusCode::OK,
                )
                .await;
            }
            2 => {
                let name = mine[(i as usize / 4) % mine.len()].clone();
                let n = counters.entry(name.clone()).or_insert(0);
                *n += 1;
                let n = *n;
                shared
                    .patches
                    .lock()
                    .entry(name.clone())
                    .or_insert((0, 0))
                    .1 = n;
                let body =
                    serde_json::to_vec(&json!({"data": {"n": n.to_string()}})).unwrap_or_default();
                if call(
                    &c,
                    Method::PATCH,
                    &format!("{base}/{name}"),
                    Some(("application/merge-patch+json", body)),
                    StatusCode::OK,
                )
                .await
                .is_ok()
                {
                    shared.patches.lock().entry(name).or_insert((0, 0)).0 = n;
                }
            }
            _ => {
                let _ = call(
                    &c,
                    Method::GET,
                    &format!("{base}?labelSelector={RUN_LABEL}%3D{}", spec.run),
                    None,
                    StatusCode::OK,
                )
                .await;
            }
        }
        i += 1;
        tokio::time::sleep(spec.pause).await;
    }
}
