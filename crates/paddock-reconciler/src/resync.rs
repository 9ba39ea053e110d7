//! The repair and resync of every active tenant, driven by watches (docs/operations.md
//! "Leadership"), as the namespace-template sync is (docs/templates.md "Sync").
//!
//! While this replica leads, reflectors (`paddock_upstream::reflector`: LIST, then WATCH with
//! bookmarks, a re-list on 410 Gone and at most hourly) keep caches of the seven collections
//! the resync judges from (`paddock_core::provision::resync::Watched`): the six behind the
//! tenants' RBAC mirrors, custom-resources roles, namespace setup, billing stamps and
//! suspension marks, and the tenants' own FlowSchemas. A change a watch sees queues the tenant
//! the object belongs to (its owner label, before and after); the tenant is judged from the
//! caches alone and only what differs is written. Every [`REPLAY_EVERY`] every active tenant is judged again from the
//! caches (no upstream read). When nothing changes, nothing is sent upstream but the open
//! watches: the old timer re-read the cluster with six paged LISTs every 30 s, a steady load
//! that grew with tenants (docs/performance.md, issue 37).
//!
//! At each gain of the leadership every active tenant is repaired as before (its grants moved
//! to the current model after an upgrade); at each loss the reflectors and the caches go.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::TenantId;
use paddock_core::provision::reflect::{Cache, Settle, WorkQueue, backoff};
use paddock_core::provision::resync::{OwnerIndex, Watched, spec_in_step};
use paddock_core::provision::{tenant_flow_schema_name, tenant_own_flow_schema};
use paddock_store::TenantRecord;
use paddock_upstream::error::ServerError;
use paddock_upstream::reflector::{self, Feed, Source};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::rbac_sync::{TenantView, ViewLists};
use crate::{Reconciler, billing, lifecycle, provision, rbac_sync, suspend};

/// How often every active tenant is judged again from the caches (no upstream read).
const REPLAY_EVERY: Duration = Duration::from_secs(60);
/// The longest time between two real re-lists of a watched collection.
const RELIST_AFTER: Duration = Duration::from_secs(3600);
/// How often tenants whose repair failed are looked at for a retry.
const RETRY_TICK: Duration = Duration::from_secs(1);
/// The reflectors' channel to the resync.
const CHANNEL: usize = 1024;
/// A tenant is judged once its objects have been quiet this long (`Settle`): not in the middle
/// of its own creation, which would be "repaired" beside it...
const QUIET: Duration = Duration::from_millis(1000);
/// ...but never later than this after its first change (drift is back within ~1 s).
const LONGEST: Duration = Duration::from_secs(5);
/// How often settled tenants are looked for.
const SETTLE_TICK: Duration = Duration::from_millis(200);

/// While this replica leads: the watch-driven resync of every active tenant of its cluster.
pub async fn resync_loop(state: Arc<Reconciler>) {
    let leadership = state.leadership.clone();
    leadership
        .while_leader("tenant resync", &state.shutdown, || {
            resync_leading(state.clone())
        })
        .await;
}

/// One leadership: dropped (reflectors, caches and all) when it is lost.
async fn resync_leading(state: Arc<Reconciler>) {
    let stop = state.shutdown.child_token();
    let _stop_reflectors = stop.clone().drop_guard();
    let (tx, mut rx) = mpsc::channel(CHANNEL);
    let apf = state.tenant_priority_shares > 0;
    // Without APF objects of its own paddock leaves FlowSchemas alone (and may lack the right
    // to watch them, docs/operations.md).
    for w in Watched::ALL
        .into_iter()
        .filter(|w| apf || *w != Watched::FlowSchemas)
    {
        let source = Source::new(w.collection(), &w.selector(None), RELIST_AFTER);
        let (state, tx, stop) = (state.clone(), tx.clone(), stop.clone());
        tokio::spawn(async move {
            reflector::run(&state.upstream, &source, w.index(), tx, stop).await;
        });
    }
    drop(tx);
    // The reflectors list meanwhile; what they read waits in the channel.
    repair_all(&state).await;
    let mut r = Resync::new(state.clone());
    let mut replay = tokio::time::interval_at(Instant::now() + REPLAY_EVERY, REPLAY_EVERY);
    replay.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut retry = tokio::time::interval(RETRY_TICK);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut settle = tokio::time::interval(SETTLE_TICK);
    settle.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut store = state.cache.subscribe();
    loop {
        tokio::select! {
            f = rx.recv() => match f {
                Some((id, feed)) => r.feed(id, feed),
                None => return,
            },
            Ok(()) = store.changed() => r.records_changed(),
            _ = replay.tick() => r.enqueue_all(),
            _ = retry.tick() => r.retry_due(),
            _ = settle.tick(), if !r.settle.is_empty() => r.settled(),
            _ = state.shutdown.cancelled() => return,
        }
        // What else has arrived first: a burst of events is one judgement per tenant.
        while let Ok((id, feed)) = rx.try_recv() {
            r.feed(id, feed);
        }
        r.work().await;
    }
}

/// At the gain of the leadership: every active tenant's grants and billing stamps repaired
/// with reads of its own (an upgrade moves old grants to the current model).
async fn repair_all(state: &Reconciler) {
    for t in active_tenants(state) {
        if let Err(e) = lifecycle::repair_tenant(&state.upstream, &t).await {
            tracing::warn!(tenant = %t, error = %e, "tenant repair failed");
        }
        if let Some(rec) = state.cache.tenant(t.as_str())
            && let Err(e) = billing::restamp_tenant(&state.upstream, &t, &rec.billing).await
        {
            tracing::warn!(tenant = %t, error = %e, "billing key restamp failed");
        }
    }
}

/// The live tenants (active or suspended: a suspended tenant's objects are kept in step as
/// an active one's, and its namespaces' suspension mark too) that live on this reconciler's
/// cluster.
pub(crate) fn active_tenants(state: &Reconciler) -> Vec<TenantId> {
    state
        .cache
        .tenants()
        .into_iter()
        .filter(|rec| rec.phase.is_live() && state.owns(rec))
        .map(|rec| rec.id.clone())
        .collect()
}

/// The resync of one leadership: the caches, who owns what in them, and the queue.
struct Resync {
    state: Arc<Reconciler>,
    /// By [`Watched::index`].
    caches: [Cache; Watched::ALL.len()],
    index: OwnerIndex,
    queue: WorkQueue<TenantId>,
    /// Tenants a change concerns, until their objects are quiet.
    settle: Settle<TenantId>,
    /// The origin of `settle`'s times.
    started: Instant,
    /// A tenant whose repair failed: not before this, and failures in a row.
    retry: BTreeMap<TenantId, (Instant, u32)>,
    /// The tenant records as last seen in the store cache.
    records: BTreeMap<TenantId, Arc<TenantRecord>>,
    /// Every cache has had its first list: before that, absence means nothing (a mirror
    /// cache filled before the bindings' would read as mirrors to delete).
    synced: bool,
}

impl Resync {
    fn new(state: Arc<Reconciler>) -> Self {
        let mut caches: [Cache; Watched::ALL.len()] = std::array::from_fn(|_| Cache::default());
        if state.tenant_priority_shares == 0 {
            // Not watched (above): an empty list stands for it.
            caches[Watched::FlowSchemas.index()].replace(Vec::new());
        }
        Resync {
            state,
            caches,
            index: OwnerIndex::default(),
            queue: WorkQueue::default(),
            settle: Settle::new(QUIET, LONGEST),
            started: Instant::now(),
            retry: BTreeMap::new(),
            records: BTreeMap::new(),
            synced: false,
        }
    }

    /// What a reflector read: into its cache and the index; the tenants it concerns queued.
    fn feed(&mut self, id: usize, feed: Feed) {
        let Some(&w) = Watched::ALL.get(id) else {
            return;
        };
        let cache = &mut self.caches[id];
        // A refusal is not asked for (no `refused_wait`): it is retried as a failure.
        let changes = feed.into_cache(cache);
        for c in changes {
            let (ns, name) = c.key().clone();
            let owner = self.caches[id].get(&ns, &name).and_then(|o| w.owner(o));
            let now = self.started.elapsed();
            for t in self.index.set(w, (ns, name), owner) {
                self.settle.changed(t, now);
            }
        }
        if !self.synced && self.caches.iter().all(|c| c.synced) {
            self.synced = true;
            tracing::info!("tenant resync: every watched collection listed; judging every tenant");
            self.enqueue_all();
        }
    }

    /// The store cache changed: the tenants whose record changed are judged again. A billing
    /// key changed through another replica is stamped there, and the namespace events of that
    /// stamping may reach this resync before the new record does; judged with the old key,
    /// the namespaces would be stamped back, so the new record is judged again as it arrives.
    /// A tenant that became active is judged at once too.
    fn records_changed(&mut self) {
        let now: BTreeMap<TenantId, Arc<TenantRecord>> = self
            .state
            .cache
            .tenants()
            .into_iter()
            .map(|rec| (rec.id.clone(), rec))
            .collect();
        for (t, rec) in &now {
            if self.records.get(t).is_none_or(|old| **old != **rec) {
                self.settle.changed(t.clone(), self.started.elapsed());
            }
        }
        self.records = now;
    }

    /// Tenants whose objects have gone quiet: queued.
    fn settled(&mut self) {
        for t in self.settle.due(self.started.elapsed()) {
            self.queue.add(t);
        }
    }

    fn enqueue_all(&mut self) {
        for t in active_tenants(&self.state) {
            self.queue.add(t);
        }
    }

    fn retry_due(&mut self) {
        let now = Instant::now();
        let due: Vec<TenantId> = self
            .retry
            .iter()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(t, _)| t.clone())
            .collect();
        for t in due {
            self.queue.add(t);
        }
    }

    /// Judges every queued tenant, one after the other (a tenant in step costs no request).
    async fn work(&mut self) {
        if !self.synced {
            return;
        }
        while let Some(t) = self.queue.take() {
            let waiting = self
                .retry
                .get(&t)
                .is_some_and(|(at, _)| *at > Instant::now());
            if !waiting {
                match self.reconcile(&t).await {
                    Ok(()) => {
                        self.retry.remove(&t);
                    }
                    Err(e) => {
                        tracing::warn!(tenant = %t, error = %e, "tenant resync failed; retried with backoff");
                        let n = self.retry.get(&t).map_or(0, |(_, n)| *n);
                        let at = Instant::now() + backoff(n, 0.5);
                        self.retry.insert(t.clone(), (at, n.saturating_add(1)));
                    }
                }
            }
            self.queue.done(&t);
        }
    }

    /// Brings one tenant in step with what the caches show: its RBAC mirrors, its
    /// custom-resources role, the setup of its namespaces, its billing stamps and its
    /// FlowSchema. Writes nothing when all agrees.
    async fn reconcile(&self, t: &TenantId) -> Result<(), ServerError> {
        let Some(rec) = self.state.cache.tenant(t.as_str()) else {
            return Ok(());
        };
        if !rec.phase.is_live() || !self.state.owns(&rec) {
            return Ok(());
        }
        let up = &self.state.upstream;
        let view = self.view(t);
        rbac_sync::reconcile_tenant(up, t, &view).await?;
        let stamped = billing::restamp_listed(up, t, &rec.billing, view.namespaces()).await?;
        if stamped > 0 {
            tracing::info!(tenant = %t, namespaces = stamped, "billing key restamped");
        }
        let suspended = rec.is_suspended();
        let marked = suspend::mark_listed(up, t, suspended, view.namespaces()).await?;
        if marked > 0 {
            tracing::info!(tenant = %t, namespaces = marked, suspended, "suspension mark brought in step");
        }
        let cached = self.caches[Watched::FlowSchemas.index()].get("", &tenant_flow_schema_name(t));
        let own = self.state.own_flow_schema(&rec);
        let in_step = if own {
            spec_in_step(&tenant_own_flow_schema(t), cached)
        } else {
            cached.is_none()
        };
        if !in_step {
            provision::sync_tenant_flow_schema(up, t, own).await?;
            tracing::info!(tenant = %t, own, missing = cached.is_none(), "tenant FlowSchema brought in step");
        }
        Ok(())
    }

    /// Tenant `t`'s view, from the caches (its objects found through the index).
    fn view(&self, t: &TenantId) -> TenantView {
        let objects = self
            .index
            .of(t)
            .filter_map(|(w, (ns, name))| self.caches[w.index()].get(ns, name).map(|o| (*w, o)));
        ViewLists::from_cached(objects)
            .by_tenant()
            .remove(t)
            .unwrap_or_default()
    }
}
