//! The quota recount (docs/quota.md "Recount"): the leader's periodic count of what exists
//! of every kind a tenant quota limits, and its view of the cluster, kept from watches, as
//! a controller's informers keep theirs: while this replica leads, one reflector on the
//! tenant namespaces and one per collection some tenant's quota tracks (namespaced kinds
//! cluster-wide, cluster-scoped kinds by the tenant label), each keeping what the quota
//! evaluation reads (`paddock_core::quota::recount_shape`) of tenants' objects only. A
//! recount is a fold over those caches: when nothing changes it reads nothing upstream, and
//! a deletion frees its charge at the next tick. A collection no quota tracks any more is no
//! longer watched.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use paddock_core::clusters::cluster::DEFAULT_CLUSTER;
use paddock_core::provision::reflect::Cache;
use paddock_core::quota::{self, Quotas, recount_shape};
use paddock_core::{Scope, TENANT_LABEL, TenantId};
use paddock_upstream::error::ServerError;
use paddock_upstream::reflector::{self, Feed, Source};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::quota::{Count, SWAP_ATTEMPTS, is_default_namespace, now_ms, quotas_of};
use crate::state::AppState;

/// The longest time between two real re-lists of a watched collection.
const RELIST_AFTER: Duration = Duration::from_secs(3600);
/// The reflectors' channel to the recount.
const CHANNEL: usize = 1024;
/// The id of the tenant namespaces' reflector.
const NAMESPACES: usize = 0;

/// One kind a tenant's quota tracks, resolved upstream.
struct Tracked {
    /// Tenant-view group, as charged.
    group: String,
    upstream_group: String,
    resource: String,
    cluster: bool,
    /// The watched collection, e.g. `/api/v1/pods`.
    collection: String,
}

/// Recounts one tenant from what the watches hold (`counted_at`: when): that replaces the
/// ledger's count; reservations of objects now counted, or too old to still be coming, are
/// dropped.
async fn recount_tenant(
    state: &AppState,
    tid: &TenantId,
    count: Count,
    counted_at: u64,
) -> Result<(), ServerError> {
    let lock = state.quota_locks.of(tid);
    let _serial = lock.lock().await;
    for _ in 0..SWAP_ATTEMPTS {
        let cur = state.store.get_quota_ledger(tid).await?;
        let next = quota::recount(
            &cur.ledger,
            count.usage.clone(),
            &count.seen,
            counted_at,
            now_ms(),
        );
        if next == cur.ledger {
            return Ok(());
        }
        // A recount older than the one stored (another replica's, taken later) loses.
        if cur.ledger.counted_at_ms > counted_at {
            return Ok(());
        }
        if state
            .store
            .swap_quota_ledger(tid, &next, cur.version)
            .await?
        {
            return Ok(());
        }
    }
    Ok(())
}

/// The leader recounts every active tenant with a quota, each `recount_interval`, from the
/// recount's watches (docs/operations.md "Leadership"; the ledger's
/// compare-and-swap keeps a second counter harmless all the same).
pub async fn recount_loop(state: Arc<AppState>) {
    let leadership = state.leadership.clone();
    leadership
        .while_leader("quota recount", &state.shutdown, || {
            recount_leading(state.clone())
        })
        .await;
}

async fn recount_leading(state: Arc<AppState>) {
    let (tx, mut rx) = mpsc::channel(CHANNEL);
    // One set of watches per cluster some tenant with a quota lives on.
    let mut watches: BTreeMap<String, QuotaWatch> = BTreeMap::new();
    let mut tick = tokio::time::interval(state.config.quota.recount_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            fed = rx.recv() => {
                if let Some((cluster, id, feed)) = fed
                    && let Some(w) = watches.get_mut(&cluster)
                {
                    w.feed(id, feed);
                }
                continue;
            }
            _ = state.shutdown.cancelled() => return,
        }
        let mut wanted: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for rec in state.cache.tenants() {
            if rec.phase != paddock_store::TenantPhase::Active {
                continue;
            }
            let quotas = match quotas_of(&state, &rec.id) {
                Ok(Some(q)) => q,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(tenant = %rec.id, error = %e, "quota recount failed");
                    continue;
                }
            };
            let counted_at = now_ms();
            let clusters = rec.cluster_names();
            let done = match count_everywhere(
                &state,
                &rec.id,
                &clusters,
                &quotas,
                &mut watches,
                &tx,
                &mut wanted,
            )
            .await
            {
                Ok(Some(count)) => recount_tenant(&state, &rec.id, count, counted_at).await,
                // A collection not listed yet, or a cluster that does not answer: the next
                // tick (a recount from part of the tenant's clusters would free charges).
                Ok(None) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(e) = done {
                tracing::warn!(tenant = %rec.id, error = %e, "quota recount failed");
            }
        }
        // A cluster no tenant with a quota lives on any more (or removed) is no longer
        // watched; on the others, the collections no quota tracks.
        watches.retain(|name, _| wanted.contains_key(name));
        for (name, w) in &mut watches {
            if let Some(keep) = wanted.get(name) {
                w.retain(keep);
            }
        }
    }
}

/// What exists of the tenant's tracked kinds on all its clusters, summed (one ledger: the
/// quota is global across clusters, docs/clusters.md "Governance on every cluster"); `None`
/// until every cluster's collections are listed and answering. Cluster-scoped objects are
/// counted on the home only: the replicated kinds exist on every cluster of a spanning
/// tenant, once for the tenant.
async fn count_everywhere(
    state: &Arc<AppState>,
    tid: &TenantId,
    clusters: &[&str],
    quotas: &Quotas,
    watches: &mut BTreeMap<String, QuotaWatch>,
    tx: &mpsc::Sender<(String, usize, Feed)>,
    wanted: &mut BTreeMap<String, BTreeSet<String>>,
) -> Result<Option<Count>, ServerError> {
    let mut total = Count::default();
    let mut complete = true;
    for (i, name) in clusters.iter().enumerate() {
        let wanted = wanted.entry((*name).to_string()).or_default();
        // The recount runs on the default cluster's state; the others are its members.
        let cluster = if *name == DEFAULT_CLUSTER {
            Some(state.clone())
        } else {
            state.clusters.member(name).map(|m| m.state.clone())
        };
        let Some(cluster) = cluster.filter(|c| c.health.is_healthy()) else {
            complete = false;
            continue;
        };
        let w = watches
            .entry((*name).to_string())
            .or_insert_with(|| QuotaWatch::new(cluster, name, tx.clone()));
        match w.count(tid, quotas, i == 0, wanted).await? {
            Some(c) => total.absorb(c),
            None => complete = false,
        }
    }
    if !complete {
        return Ok(None);
    }
    quotas.known_zeros(&mut total.usage);
    Ok(Some(total))
}

/// One cluster's caches, by reflector id.
pub(super) struct QuotaWatch {
    state: Arc<AppState>,
    /// The reflectors' feeds, forwarded to the recount tagged with the cluster.
    tx: mpsc::Sender<(usize, Feed)>,
    caches: HashMap<usize, (Cache, CancellationToken)>,
    ids: HashMap<String, usize>,
    next_id: usize,
    /// Every reflector's token is a child of this one, cancelled when the watch is dropped
    /// (the leadership lost, the replica stopping).
    stop: CancellationToken,
    _guard: DropGuard,
}

impl QuotaWatch {
    pub(super) fn new(
        state: Arc<AppState>,
        cluster: &str,
        out: mpsc::Sender<(String, usize, Feed)>,
    ) -> QuotaWatch {
        let stop = state.shutdown.child_token();
        let (tx, mut rx) = mpsc::channel(CHANNEL);
        let (cluster, forwarding) = (cluster.to_string(), stop.clone());
        tokio::spawn(async move {
            loop {
                let fed = tokio::select! {
                    fed = rx.recv() => fed,
                    _ = forwarding.cancelled() => return,
                };
                let Some((id, feed)) = fed else { return };
                if out.send((cluster.clone(), id, feed)).await.is_err() {
                    return;
                }
            }
        });
        let mut w = QuotaWatch {
            state,
            tx,
            caches: HashMap::new(),
            ids: HashMap::new(),
            next_id: NAMESPACES,
            _guard: stop.clone().drop_guard(),
            stop,
        };
        w.watch("/api/v1/namespaces", true);
        w
    }

    /// The id of `collection`'s reflector, started if it is not running.
    fn watch(&mut self, collection: &str, labelled: bool) -> usize {
        if let Some(id) = self.ids.get(collection) {
            return *id;
        }
        let id = self.next_id;
        self.next_id += 1;
        let selector = if labelled { TENANT_LABEL } else { "" };
        let source = Source {
            shape: recount_shape,
            ..Source::new(collection, selector, RELIST_AFTER)
        };
        let stop = self.stop.child_token();
        let (state, tx, s) = (self.state.clone(), self.tx.clone(), stop.clone());
        tokio::spawn(async move { reflector::run(&state.upstream, &source, id, tx, s).await });
        self.ids.insert(collection.to_string(), id);
        self.caches.insert(id, (Cache::default(), stop));
        id
    }

    pub(super) fn feed(&mut self, id: usize, feed: Feed) {
        let Some((cache, _)) = self.caches.get_mut(&id) else {
            return;
        };
        feed.into_cache(cache);
    }

    /// The kinds `quotas` track for `tid`, resolved upstream (a kind the upstream does not
    /// serve, a CRD not created yet, has no objects and is left out).
    async fn tracked(&self, tid: &TenantId, quotas: &Quotas) -> Result<Vec<Tracked>, ServerError> {
        let catalog = self.state.catalog().await?;
        let mut out = Vec::new();
        for (group, resource) in quotas.tracked_kinds() {
            if group.is_empty() && resource == "namespaces" {
                continue;
            }
            let Some(info) = catalog.resolve_any_version(tid, &group, &resource) else {
                continue;
            };
            let base = if info.upstream_group.is_empty() {
                format!("/api/{}", info.version)
            } else {
                format!("/apis/{}/{}", info.upstream_group, info.version)
            };
            out.push(Tracked {
                group,
                upstream_group: info.upstream_group.clone(),
                collection: format!("{base}/{resource}"),
                resource,
                cluster: info.scope == Scope::Cluster,
            });
        }
        Ok(out)
    }

    /// What exists on this cluster of every kind `quotas` track for `tid`, from the caches
    /// (cluster-scoped kinds only when this is the tenant's `home`); `None` while a
    /// collection it needs has not been listed yet. Every collection it needs is added to
    /// `wanted` (and watched from now on).
    pub(super) async fn count(
        &mut self,
        tid: &TenantId,
        quotas: &Quotas,
        home: bool,
        wanted: &mut BTreeSet<String>,
    ) -> Result<Option<Count>, ServerError> {
        let tracked = self.tracked(tid, quotas).await?;
        let ids: Vec<usize> = tracked
            .iter()
            .map(|t| {
                wanted.insert(t.collection.clone());
                self.watch(&t.collection, t.cluster)
            })
            .collect();
        let synced = |id: &usize| self.caches.get(id).is_some_and(|(c, _)| c.synced);
        if !synced(&NAMESPACES) || !ids.iter().all(synced) {
            return Ok(None);
        }
        let namespaces: Vec<String> = self.caches[&NAMESPACES]
            .0
            .values()
            .filter(|ns| ns["metadata"]["labels"][TENANT_LABEL].as_str() == Some(tid.as_str()))
            .filter_map(|ns| ns["metadata"]["name"].as_str())
            .filter(|n| tid.strip(n).is_some())
            .map(str::to_string)
            .collect();
        let mut count = Count::default();
        if quotas
            .tracked_kinds()
            .contains(&(String::new(), "namespaces".into()))
        {
            for ns in namespaces
                .iter()
                .filter(|ns| !is_default_namespace(tid, ns))
            {
                count.charge(
                    quotas,
                    "",
                    "",
                    "namespaces",
                    "",
                    &json!({"metadata": {"name": ns}}),
                );
            }
        }
        for (t, id) in tracked.iter().zip(&ids) {
            let cache = &self.caches[id].0;
            if t.cluster && !home {
                continue;
            }
            if t.cluster {
                let own = |o: &&Value| {
                    o["metadata"]["labels"][TENANT_LABEL].as_str() == Some(tid.as_str())
                };
                for o in cache.values().filter(own) {
                    count.charge(quotas, &t.group, &t.upstream_group, &t.resource, "", o);
                }
                continue;
            }
            for ns in &namespaces {
                for o in cache.in_namespace(ns) {
                    count.charge(quotas, &t.group, &t.upstream_group, &t.resource, ns, o);
                }
            }
        }
        Ok(Some(count))
    }

    /// Stops the reflectors of collections no quota tracks any more.
    pub(super) fn retain(&mut self, wanted: &BTreeSet<String>) {
        let gone: Vec<String> = self
            .ids
            .keys()
            .filter(|c| *c != "/api/v1/namespaces" && !wanted.contains(*c))
            .cloned()
            .collect();
        for c in gone {
            if let Some(id) = self.ids.remove(&c)
                && let Some((_, stop)) = self.caches.remove(&id)
            {
                stop.cancel();
            }
        }
    }
}
