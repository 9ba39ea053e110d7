//! The objects every tenant shares upstream, which the bootstrap puts in place
//! (`provision::bootstrap_objects`: the tenants' APF priority level and FlowSchema, the
//! cluster-scope role and binding, the admission guard's policies and bindings), kept there by
//! the leader from watches (docs/operations.md "Leadership"). Each carries
//! [`KEPT_LABEL`](paddock_core::provision::KEPT_LABEL); one watch per collection selects by
//! it. An object a watch shows missing, being deleted, or differing from what paddock sets
//! (`spec_in_step`) is applied again: a deleted guard policy would lift one of isolation's
//! walls, an edited shared FlowSchema would move every tenant's requests into
//! `global-default`. Before, they were put back only when a replica started. Idle, the
//! watches are all this sends.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::provision::KEPT_LABEL;
use paddock_core::provision::reflect::{Cache, backoff};
use paddock_core::provision::resync::spec_in_step;
use paddock_upstream::reflector::{self, Source};
use paddock_upstream::upjson;
use tokio::sync::mpsc;

use crate::Reconciler;
use crate::provision::{self, KeptObject};

/// The longest time between two real re-lists.
const RELIST_AFTER: Duration = Duration::from_secs(3600);

/// While this replica leads: the shared objects of its cluster kept in place (the default
/// cluster's: with paddock's webhook when it is served).
pub async fn keep_loop(state: Arc<Reconciler>) {
    keep_loop_with(state, provision::admission_webhook()).await
}

/// The same for a cluster whose objects were bootstrapped with (`webhook_here`) or without
/// paddock's webhook there (a registered cluster without its admission client CA).
pub async fn keep_loop_with(state: Arc<Reconciler>, webhook_here: bool) {
    let leadership = state.leadership.clone();
    leadership
        .while_leader("shared objects", &state.shutdown, || {
            keep_leading(state.clone(), webhook_here)
        })
        .await;
}

async fn keep_leading(state: Arc<Reconciler>, webhook_here: bool) {
    let wanted = provision::bootstrap_objects(state.tenant_priority_shares, webhook_here);
    // One watch per collection, the objects wanted in it.
    let mut by_collection: BTreeMap<&'static str, Vec<KeptObject>> = BTreeMap::new();
    for o in wanted {
        by_collection.entry(o.collection).or_default().push(o);
    }
    let groups: Vec<(&'static str, Vec<KeptObject>)> = by_collection.into_iter().collect();
    let stop = state.shutdown.child_token();
    let _stop_reflectors = stop.clone().drop_guard();
    let selector = format!("{}={}", KEPT_LABEL.0, KEPT_LABEL.1);
    let (tx, mut rx) = mpsc::channel(64);
    for (id, (collection, _)) in groups.iter().enumerate() {
        let source = Source::new(*collection, &selector, RELIST_AFTER);
        let (up, tx, stop) = (state.upstream.clone(), tx.clone(), stop.clone());
        tokio::spawn(async move { reflector::run(&up, &source, id, tx, stop).await });
    }
    drop(tx);
    let mut caches: Vec<Cache> = groups.iter().map(|_| Cache::default()).collect();
    let mut failures = 0u32;
    let mut retry: Option<usize> = None;
    loop {
        let id = tokio::select! {
            f = rx.recv() => match f {
                Some((id, feed)) => {
                    if let Some(cache) = caches.get_mut(id) {
                        feed.into_cache(cache);
                    }
                    id
                }
                None => return,
            },
            _ = tokio::time::sleep(backoff(failures, 0.5)), if retry.is_some() => {
                retry.take().unwrap_or_default()
            }
        };
        let (Some(cache), Some((_, objects))) = (caches.get(id), groups.get(id)) else {
            continue;
        };
        if !cache.synced {
            continue;
        }
        for o in objects {
            if spec_in_step(&o.object, cache.get("", &o.name)) {
                continue;
            }
            match upjson::apply(&state.upstream, &o.path(), &o.object).await {
                Ok(()) => {
                    failures = 0;
                    tracing::info!(object = %o.path(), "shared object put back");
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    retry = Some(id);
                    tracing::warn!(object = %o.path(), error = %e, "could not put a shared object back; retried");
                }
            }
        }
    }
}
