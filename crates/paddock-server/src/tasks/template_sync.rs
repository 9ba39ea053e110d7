//! Keeps every tenant namespace in step with the namespace templates, driven by watches
//! (docs/templates.md "Sync"), as kube-controller-manager's controllers are: reflectors
//! (`paddock_upstream::reflector`) keep caches of the tenant namespaces and of the locked
//! objects of every kind the mandatory templates stamp; a change they see, a template change,
//! or a replay of the caches queues the namespace; the verdict on it is taken from the caches
//! alone (`paddock_core::templates::verdict`), and only a namespace out of step, with a locked
//! object missing, drifted or stale, is stamped. When nothing changes, nothing is read or
//! written upstream but the open watches.
//!
//! Every replica keeps the caches (warm for when it takes over); only the leader stamps
//! (docs/operations.md "Leadership"): at each gain of the leadership every namespace is
//! judged from the caches, at each loss the stampings in flight are abandoned.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use paddock_core::provision::reflect::{Cache, Change, WatchEvent, WorkQueue, backoff};
use paddock_core::templates::{
    self as tpl, Observed, TEMPLATE_KINDS, Verdict, fingerprint, template_kind,
};
use paddock_reconciler::templates::{Prune, StampReport, TemplateSet, stamp_namespace};
use paddock_upstream::error::ServerError;
use paddock_upstream::reflector::{self, Feed, Source};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::templates::{WAKE, all_templates, live_tenant_namespace};
use crate::state::AppState;

/// Namespaces stamped at once.
const PARALLEL: usize = 16;
/// How often every cached namespace is judged again (from the caches: no upstream read).
const REPLAY_EVERY: Duration = Duration::from_secs(60);
/// The longest time between two real re-lists of a watched collection.
const RELIST_AFTER: Duration = Duration::from_secs(3600);
/// The reflectors' channel to the sync.
const CHANNEL: usize = 1024;
/// The id the namespace reflector sends with; a kind's is its index in `TEMPLATE_KINDS`.
const NAMESPACES: usize = usize::MAX;

type Job = (String, Result<StampReport, ServerError>);

/// The sync of one replica: its caches, what it remembers of its writes, and its queue.
struct Sync {
    state: Arc<AppState>,
    /// The cluster's name (in the log).
    cluster: String,
    set: Option<Arc<TemplateSet>>,
    namespaces: Cache,
    /// Per kind of `TEMPLATE_KINDS`: its locked objects, while the kind is watched.
    objects: Vec<Cache>,
    watching: Vec<Option<CancellationToken>>,
    /// Fingerprint of paddock's last apply, by (kind index, namespace, name).
    records: HashMap<(usize, String, String), u64>,
    queue: WorkQueue<String>,
    /// A namespace whose stamping failed: not before this, and failures in a row.
    retry: HashMap<String, (Instant, u32)>,
    /// Namespaces first seen by a watch `ADDED`, and when: left to their set-up for
    /// [`tpl::SETUP_GRACE`] unless annotated sooner.
    born: HashMap<String, Instant>,
    tx: mpsc::Sender<(usize, Feed)>,
}

/// The sync loop of one replica for one cluster (`state` is that cluster's: the default
/// cluster's, or a registered cluster's, started with its other background work).
pub async fn sync_loop(state: Arc<AppState>, cluster: String) {
    while !state
        .bootstrapped
        .load(std::sync::atomic::Ordering::Acquire)
    {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            _ = state.shutdown.cancelled() => return,
        }
    }
    let (tx, mut rx) = mpsc::channel(CHANNEL);
    let mut s = Sync::new(state.clone(), cluster, tx);
    s.spawn(
        NAMESPACES,
        "/api/v1/namespaces".into(),
        paddock_core::TENANT_LABEL,
    );
    s.reload().await;
    let every = state.config.templates.sync_interval;
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(200)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut replayed = Instant::now();
    let mut jobs: JoinSet<Job> = JoinSet::new();
    let mut leadership = state.leadership.subscribe();
    let mut leading = *leadership.borrow_and_update();
    // Off once the election is gone (or was never on): nothing to follow.
    let mut follow = true;
    loop {
        tokio::select! {
            r = leadership.changed(), if follow => match r {
                Ok(()) => {
                    let now = *leadership.borrow_and_update();
                    if now != leading {
                        s.lead(now, &mut jobs).await;
                        leading = now;
                    }
                }
                Err(_) => follow = false,
            },
            Some((id, feed)) = rx.recv() => s.feed(id, feed),
            _ = WAKE.notified() => s.reload().await,
            _ = tick.tick() => {
                // Templates written through another replica show in the store only.
                s.reload().await;
                s.retry_due();
                if replayed.elapsed() >= REPLAY_EVERY {
                    s.enqueue_all();
                    replayed = Instant::now();
                }
            }
            Some(done) = jobs.join_next(), if !jobs.is_empty() => match done {
                Ok(job) => s.finish(job),
                Err(e) => tracing::warn!(error = %e, "template stamping task failed"),
            },
            _ = state.shutdown.cancelled() => break,
        }
        if leading {
            s.start(&mut jobs);
        }
    }
    for t in s.watching.iter().flatten() {
        t.cancel();
    }
}

impl Sync {
    fn new(state: Arc<AppState>, cluster: String, tx: mpsc::Sender<(usize, Feed)>) -> Self {
        Sync {
            state,
            cluster,
            set: None,
            namespaces: Cache::default(),
            objects: TEMPLATE_KINDS.iter().map(|_| Cache::default()).collect(),
            watching: TEMPLATE_KINDS.iter().map(|_| None).collect(),
            records: HashMap::new(),
            queue: WorkQueue::default(),
            retry: HashMap::new(),
            born: HashMap::new(),
            tx,
        }
    }

    /// Starts a reflector sending as `id`; its token stops it.
    fn spawn(&self, id: usize, collection: String, selector: &str) -> CancellationToken {
        let stop = self.state.shutdown.child_token();
        let source = Source::new(collection, selector, RELIST_AFTER);
        let (state, tx, s) = (self.state.clone(), self.tx.clone(), stop.clone());
        tokio::spawn(async move { reflector::run(&state.upstream, &source, id, tx, s).await });
        stop
    }

    /// Reads the templates (configuration and store); when they changed, every namespace is
    /// judged again and the watched kinds follow the mandatory templates'.
    async fn reload(&mut self) {
        let set = match all_templates(&self.state).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "namespace templates could not be read");
                return;
            }
        };
        let same = self.set.as_ref().is_some_and(|cur| {
            cur.templates == set.templates && Arc::ptr_eq(&cur.catalog, &set.catalog)
        });
        if same {
            return;
        }
        let kinds: BTreeSet<&str> = tpl::watched_kinds(&set.templates)
            .iter()
            .map(|k| k.resource)
            .collect();
        for (i, k) in TEMPLATE_KINDS.iter().enumerate() {
            let want = kinds.contains(k.resource);
            match (&self.watching[i], want) {
                (None, true) => {
                    let path = format!("{}{}", api_prefix(k.api_version), k.resource);
                    self.watching[i] = Some(self.spawn(i, path, &locked_selector()));
                }
                (Some(t), false) => {
                    t.cancel();
                    self.watching[i] = None;
                    self.objects[i] = Cache::default();
                }
                _ => {}
            }
        }
        self.set = Some(Arc::new(set));
        self.enqueue_all();
    }

    /// Leadership gained: every namespace judged. Lost: the stampings in flight abandoned and
    /// the queue emptied (the next gain judges everything again), and what this replica
    /// remembers of its writes forgotten: the leader meanwhile writes them, and a stale
    /// record would read as drift (without one, drift is told by the managed fields).
    async fn lead(&mut self, leading: bool, jobs: &mut JoinSet<Job>) {
        if leading {
            self.enqueue_all();
            return;
        }
        jobs.abort_all();
        while jobs.join_next().await.is_some() {}
        self.queue = WorkQueue::default();
        self.retry.clear();
        self.records.clear();
    }

    fn enqueue_all(&mut self) {
        let names: Vec<String> = self
            .namespaces
            .values()
            .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        for n in names {
            self.queue.add(n);
        }
    }

    fn retry_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .retry
            .iter()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(n, _)| n.clone())
            .collect();
        for n in due {
            self.queue.add(n);
        }
    }

    /// What a reflector read: into its cache, and the namespaces it touched queued.
    fn feed(&mut self, id: usize, feed: Feed) {
        let cache = match id {
            NAMESPACES => &mut self.namespaces,
            i if self.watching.get(i).is_some_and(Option::is_some) => &mut self.objects[i],
            // A kind no longer watched: what was in flight is dropped.
            _ => return,
        };
        let first_list = !cache.synced && matches!(feed, Feed::Listed(_));
        if id == NAMESPACES
            && let Feed::Event(WatchEvent::Added(o)) = &feed
            && let Some(name) = o["metadata"]["name"].as_str()
        {
            self.born.insert(name.to_string(), Instant::now());
        }
        // A refusal is not asked for (no `refused_wait`): it is retried as a failure.
        let changes = feed.into_cache(cache);
        // A kind's first list: an object missing from it (deleted while this replica was
        // not watching) shows as no change, so every namespace is judged again.
        if first_list && id != NAMESPACES {
            self.enqueue_all();
        }
        for c in changes {
            let (ns, name) = c.key().clone();
            if id == NAMESPACES {
                if matches!(c, Change::Removed(..)) {
                    self.records.retain(|(_, n, _), _| *n != name);
                    self.retry.remove(&name);
                    self.born.remove(&name);
                }
                self.queue.add(name);
            } else {
                if matches!(c, Change::Removed(..)) {
                    self.records.remove(&(id, ns.clone(), name));
                }
                self.queue.add(ns);
            }
        }
    }

    /// Judges queued namespaces, and stamps those out of step, up to [`PARALLEL`] at once.
    fn start(&mut self, jobs: &mut JoinSet<Job>) {
        while jobs.len() < PARALLEL {
            let Some(name) = self.queue.take() else {
                return;
            };
            if let Some(at) = self.left_to_setup(&name) {
                // Judged when its set-up should be done (unless a failure streak says later).
                self.retry.entry(name.clone()).or_insert((at, 0));
                self.queue.done(&name);
                continue;
            }
            match self.judge(&name) {
                Some((t, ns, prune)) => {
                    let (state, set) = (self.state.clone(), self.set.clone());
                    jobs.spawn(async move {
                        let Some(set) = set else {
                            return (name, Ok(StampReport::default()));
                        };
                        let r = stamp_namespace(&state.upstream, &t, &ns, &set, prune).await;
                        (name, r)
                    });
                }
                None => {
                    // In step (or not a live tenant's): a failure streak is over.
                    if self
                        .retry
                        .get(&name)
                        .is_some_and(|(at, _)| *at <= Instant::now())
                    {
                        self.retry.remove(&name);
                    }
                    self.queue.done(&name);
                }
            }
        }
    }

    /// When a namespace just created, not yet annotated, is to be judged: its set-up is
    /// stamping it meanwhile. `None` once annotated or older than the grace.
    fn left_to_setup(&mut self, name: &str) -> Option<Instant> {
        let born = *self.born.get(name)?;
        let annotated = self.namespaces.get("", name).is_some_and(tpl::annotated);
        if annotated || born.elapsed() >= tpl::SETUP_GRACE {
            self.born.remove(name);
            return None;
        }
        Some(born + tpl::SETUP_GRACE)
    }

    /// The stamping a namespace needs, if any: its tenant, its object, and what to prune.
    fn judge(&self, name: &str) -> Option<(paddock_core::TenantId, serde_json::Value, Prune)> {
        let set = self.set.as_ref()?;
        let ns = self.namespaces.get("", name)?;
        let t = live_tenant_namespace(&self.state, ns)?;
        if self
            .retry
            .get(name)
            .is_some_and(|(at, _)| *at > Instant::now())
        {
            return None;
        }
        let wanted = tpl::wanted(&set.templates, &t, ns);
        let mut observed = Vec::new();
        let mut synced = BTreeSet::new();
        for (i, k) in TEMPLATE_KINDS.iter().enumerate() {
            if self.watching[i].is_none() {
                continue;
            }
            if self.objects[i].synced {
                synced.insert(k.resource);
            }
            observed.extend(self.objects[i].in_namespace(name).map(|o| {
                Observed {
                    kind: k,
                    object: o,
                    recorded: o["metadata"]["name"]
                        .as_str()
                        .and_then(|n| self.records.get(&(i, name.to_string(), n.to_string())))
                        .copied(),
                }
            }));
        }
        match tpl::verdict(ns, &wanted, &observed, &synced) {
            Verdict::InStep => None,
            Verdict::Stamp { prune } => Some((t, ns.clone(), Prune::Known(prune))),
        }
    }

    /// A stamping done: its writes remembered, a failure retried later with backoff.
    fn finish(&mut self, (name, result): Job) {
        let failed = match result {
            Ok(report) => {
                for o in &report.written {
                    let Some(i) =
                        template_kind(o).and_then(|k| TEMPLATE_KINDS.iter().position(|x| x == k))
                    else {
                        continue;
                    };
                    if let Some(n) = o["metadata"]["name"].as_str() {
                        self.records
                            .insert((i, name.clone(), n.to_string()), fingerprint(o));
                    }
                }
                if report.applied + report.deleted > 0 {
                    tracing::info!(cluster = %self.cluster, namespace = %name, applied = report.applied, deleted = report.deleted, failed = report.failed.len(), "namespace templates stamped");
                }
                !report.failed.is_empty()
            }
            Err(e) => {
                tracing::warn!(cluster = %self.cluster, namespace = %name, error = %e, "template sync of a namespace failed");
                true
            }
        };
        if failed {
            let n = self.retry.get(&name).map_or(0, |(_, n)| *n);
            let at = Instant::now() + backoff(n, 0.5);
            self.retry.insert(name.clone(), (at, n.saturating_add(1)));
        } else {
            self.retry.remove(&name);
        }
        self.queue.done(&name);
    }
}

/// `/api/v1/` or `/apis/<group>/<version>/`.
fn api_prefix(api_version: &str) -> String {
    if api_version == "v1" {
        "/api/v1/".into()
    } else {
        format!("/apis/{api_version}/")
    }
}

fn locked_selector() -> String {
    format!("{}=true", tpl::LOCKED_LABEL)
}
