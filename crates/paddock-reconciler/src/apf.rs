//! The API Priority and Fairness objects every tenant shares upstream, the `paddock-tenants`
//! PriorityLevelConfiguration and FlowSchema, kept in place by the leader from watches
//! (docs/operations.md "API Priority and Fairness"). Every tenant without a FlowSchema of its
//! own goes by them, so one edited or deleted by the platform admin would move every such
//! tenant's requests into `global-default`: each is put back when a watch shows it missing or
//! differing from what paddock sets (`spec_in_step`). Idle, the two watches are all this
//! sends.

use std::sync::Arc;
use std::time::Duration;

use paddock_core::provision::reflect::{Cache, backoff};
use paddock_core::provision::resync::spec_in_step;
use paddock_core::provision::{
    SHARED_APF_LABEL, TENANT_PRIORITY_LEVEL, tenant_flow_schema, tenant_priority_level,
};
use paddock_upstream::reflector::{self, Feed, Source};
use paddock_upstream::upjson;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::Reconciler;

/// The longest time between two real re-lists.
const RELIST_AFTER: Duration = Duration::from_secs(3600);

const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";

/// While this replica leads (and paddock manages APF): the shared objects kept in place.
pub async fn keep_loop(state: Arc<Reconciler>) {
    if state.tenant_priority_shares == 0 {
        return;
    }
    let leadership = state.leadership.clone();
    leadership
        .while_leader("shared APF objects", &state.shutdown, || {
            keep_leading(state.clone())
        })
        .await;
}

/// The collection and the object paddock wants in it, by reflector id.
fn desired(id: usize, shares: u32) -> (&'static str, Value) {
    if id == 0 {
        (LEVELS, tenant_priority_level(shares))
    } else {
        (SCHEMAS, tenant_flow_schema())
    }
}

async fn keep_leading(state: Arc<Reconciler>) {
    let stop = state.shutdown.child_token();
    let _stop_reflectors = stop.clone().drop_guard();
    let selector = format!("{}={}", SHARED_APF_LABEL.0, SHARED_APF_LABEL.1);
    let (tx, mut rx) = mpsc::channel(16);
    for id in 0..2 {
        let source = Source::new(desired(id, 0).0, &selector, RELIST_AFTER);
        let (up, tx, stop) = (state.upstream.clone(), tx.clone(), stop.clone());
        tokio::spawn(async move { reflector::run(&up, &source, id, tx, stop).await });
    }
    drop(tx);
    let mut caches = [Cache::default(), Cache::default()];
    let mut failures = 0u32;
    let mut retry: Option<usize> = None;
    loop {
        let id = tokio::select! {
            f = rx.recv() => match f {
                Some((id, feed)) => {
                    match feed {
                        Feed::Listed(items) => { caches[id].replace(items); }
                        Feed::Event(ev) => { caches[id].apply(ev); }
                        Feed::Refused(_) => {}
                    }
                    id
                }
                None => return,
            },
            _ = tokio::time::sleep(backoff(failures, 0.5)), if retry.is_some() => {
                retry.take().unwrap_or_default()
            }
        };
        if !caches[id].synced {
            continue;
        }
        let (collection, want) = desired(id, state.tenant_priority_shares);
        if spec_in_step(&want, caches[id].get("", TENANT_PRIORITY_LEVEL)) {
            continue;
        }
        let path = format!("{collection}/{TENANT_PRIORITY_LEVEL}");
        match upjson::apply(&state.upstream, &path, &want).await {
            Ok(()) => {
                failures = 0;
                tracing::info!(object = %path, "shared APF object put back");
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                retry = Some(id);
                tracing::warn!(object = %path, error = %e, "could not put the shared APF object back; retried");
            }
        }
    }
}
