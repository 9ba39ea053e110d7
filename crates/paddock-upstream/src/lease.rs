//! Leader election's I/O (the decisions are `paddock_core::provision::lease`), as client-go's
//! `leaderelection` does it on a `coordination.k8s.io/v1` Lease (docs/operations.md
//! "Leadership"): read the Lease, create it when absent, write it with its resourceVersion
//! (a 409 means another replica wrote first: read again). The holder renews every
//! `renew_interval()` without reading first; a replica that does not hold the Lease watches
//! it (one open stream, no polling) and reads it once more before it takes it. What the
//! replica may do is published on a [`Leadership`] handle; at `stop` the holder releases the
//! Lease so that another replica takes over at once.

use std::future::Future;
use std::time::Duration;

use http::{Method, StatusCode};
use paddock_core::provision::lease::{Elector, LEASE_API_VERSION, Next, Now};
use paddock_core::provision::reflect::WatchEvent;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::reflector::{self, Feed, Source};
use crate::upjson;
use crate::upstream::Upstream;

/// Requests the election sent (reads and writes of the Lease, not the watch):
/// `paddock_leader_election_requests_total` on `/metrics`.
pub static LEASE_REQUESTS: std::sync::LazyLock<prometheus_client::metrics::counter::Counter> =
    std::sync::LazyLock::new(Default::default);

/// Where the Lease is, who this replica is, and the election's timing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    /// How long a Lease nobody renews stays held (client-go: 15 s).
    pub lease_duration: Duration,
    /// How long after its last accepted renewal the holder stops acting as the leader when it
    /// cannot renew (client-go: 10 s); shorter than `lease_duration`.
    pub renew_deadline: Duration,
    /// How soon a failed read or write is tried again (client-go: 2 s).
    pub retry_period: Duration,
}

impl LeaseSettings {
    /// How often the holder renews: a third of the lease duration, at most half the renew
    /// deadline so that two tries fit before it (one write per 5 s by default, where
    /// client-go's holder reads and writes every retry period, 2 s).
    pub fn renew_interval(&self) -> Duration {
        (self.lease_duration / 3).min(self.renew_deadline / 2)
    }
}

/// Whether this replica may do the once-per-fleet work now, and a wait until it may.
#[derive(Debug, Clone)]
pub struct Leadership {
    rx: watch::Receiver<bool>,
}

impl Leadership {
    /// A handle that always leads (leader election off: every replica does everything).
    pub fn always() -> Self {
        let (_tx, rx) = watch::channel(true);
        Leadership { rx }
    }

    /// A handle that follows `tx`'s election (starts as not leading).
    pub fn new() -> (watch::Sender<bool>, Self) {
        let (tx, rx) = watch::channel(false);
        (tx, Leadership { rx })
    }

    pub fn is_leader(&self) -> bool {
        *self.rx.borrow()
    }

    /// A receiver of the leadership, for a `select!` on its changes.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.rx.clone()
    }

    /// Waits until this replica leads; `false` when `stop` came first or the election ended.
    pub async fn until_leader(&self, stop: &CancellationToken) -> bool {
        let mut rx = self.rx.clone();
        tokio::select! {
            r = rx.wait_for(|l| *l) => r.is_ok(),
            _ = stop.cancelled() => false,
        }
    }

    /// Resolves when this replica stops leading (never for [`Leadership::always`]).
    pub async fn lost(&self) {
        let mut rx = self.rx.clone();
        if rx.wait_for(|l| !*l).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Runs `work` while this replica leads: started at each gain of the leadership, dropped
    /// (its I/O abandoned) at each loss, until `stop`. `what` names it in the log.
    pub async fn while_leader<F, Fut>(&self, what: &str, stop: &CancellationToken, mut work: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = ()>,
    {
        while self.until_leader(stop).await {
            tokio::select! {
                _ = work() => return,
                _ = self.lost() => {
                    tracing::info!(task = what, "leadership lost: leader-only task stopped");
                }
                _ = stop.cancelled() => return,
            }
        }
    }
}

/// The election of one replica, until `stop`; then it releases the Lease if it holds it.
/// `tx` carries whether it leads.
pub async fn run(up: Upstream, s: LeaseSettings, tx: watch::Sender<bool>, stop: CancellationToken) {
    let mut el = Election::new(up, s);
    let (ftx, mut feed) = mpsc::channel(16);
    let watch_stop = stop.child_token();
    let source = Source::new(el.collection(), "", Duration::from_secs(3600));
    let up2 = el.up.clone();
    let ws = watch_stop.clone();
    tokio::spawn(async move { reflector::run(&up2, &source, 0, ftx, ws).await });
    let mut next_try = Instant::now();
    loop {
        publish(&tx, &el);
        let lead_ends = el.lead_ends().unwrap_or_else(far_future);
        tokio::select! {
            _ = tokio::time::sleep_until(next_try) => next_try = el.step().await,
            Some((_, f)) = feed.recv() => {
                if let Some(at) = el.seen(f) {
                    next_try = at;
                }
            }
            // The renew deadline passed without a renewal: stop leading now, not at the next try.
            _ = tokio::time::sleep_until(lead_ends) => {}
            _ = stop.cancelled() => break,
        }
    }
    watch_stop.cancel();
    // Leader-only work stops before the Lease is given up.
    tx.send_replace(false);
    el.release().await;
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400)
}

fn publish(tx: &watch::Sender<bool>, el: &Election) {
    let leading = el.leading();
    let was = tx.send_replace(leading);
    if was != leading {
        let holder = el.elector.record().map(|r| r.holder.clone());
        if leading {
            tracing::info!(identity = el.s.identity, lease = %el.describe(), "leadership gained: this replica does the once-per-fleet work");
        } else {
            tracing::info!(identity = el.s.identity, lease = %el.describe(), holder = ?holder, "leadership lost");
        }
    }
}

/// Why a write of the Lease did not go through.
enum Refused {
    /// Another replica wrote first (409).
    Conflict,
    /// The namespace does not exist (404 on create).
    NoNamespace,
    Other(String),
}

struct Election {
    up: Upstream,
    s: LeaseSettings,
    elector: Elector,
    origin: Instant,
}

impl Election {
    fn new(up: Upstream, s: LeaseSettings) -> Self {
        let elector = Elector::new(&s.namespace, &s.name, &s.identity, s.lease_duration);
        Election {
            up,
            s,
            elector,
            origin: Instant::now(),
        }
    }

    fn collection(&self) -> String {
        format!(
            "/apis/{LEASE_API_VERSION}/namespaces/{}/leases",
            self.s.namespace
        )
    }

    fn path(&self) -> String {
        format!("{}/{}", self.collection(), self.s.name)
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.s.namespace, self.s.name)
    }

    fn mono(&self) -> Duration {
        self.origin.elapsed()
    }

    fn instant(&self, mono: Duration) -> Instant {
        self.origin + mono
    }

    fn leading(&self) -> bool {
        self.elector.leading(self.mono(), self.s.renew_deadline)
    }

    /// When this replica stops leading unless it renews first.
    fn lead_ends(&self) -> Option<Instant> {
        self.leading()
            .then(|| self.elector.written_at())
            .flatten()
            .map(|t| self.instant(t + self.s.renew_deadline))
    }

    /// What the watch saw; the time of the next try when it changes it. While this replica
    /// holds the Lease, only another's write counts (its own come back as events, and an
    /// event may arrive after a newer write).
    fn seen(&mut self, feed: Feed) -> Option<Instant> {
        let lease = match feed {
            Feed::Listed(items) => items.into_iter().find(|l| self.is_ours(l)),
            Feed::Event(WatchEvent::Added(l) | WatchEvent::Modified(l)) => {
                Some(l).filter(|l| self.is_ours(l))
            }
            Feed::Event(WatchEvent::Deleted(l)) if self.is_ours(&l) => None,
            Feed::Event(_) | Feed::Refused(_) => return None,
        };
        let others = lease
            .as_ref()
            .is_some_and(|l| l["spec"]["holderIdentity"].as_str() != Some(&self.s.identity));
        if self.elector.is_holder() && !others {
            return None;
        }
        self.elector.observe(lease.as_ref(), self.mono());
        // Held by another: look again at its expiry. Released, gone, or naming this replica
        // (taken from it, or its own from before a restart): act now.
        let another = self
            .elector
            .record()
            .is_some_and(|r| !r.holder.is_empty() && r.holder != self.s.identity);
        match self.elector.expires() {
            Some(t) if another => Some(self.instant(t)),
            _ => Some(Instant::now()),
        }
    }

    fn is_ours(&self, lease: &Value) -> bool {
        lease["metadata"]["name"].as_str() == Some(self.s.name.as_str())
    }

    /// One round: renew (the holder, without reading first), or read and decide. Answers
    /// when the next round is due.
    async fn step(&mut self) -> Instant {
        let retry = Instant::now() + self.s.retry_period;
        if self.leading() {
            let stamp = stamp();
            if let Next::Update(l) = self.elector.next(self.now(&stamp)) {
                match self.write(Method::PUT, &self.path(), &l).await {
                    Ok(()) => return Instant::now() + self.s.renew_interval(),
                    // Written by another, or deleted: read it and decide.
                    Err(Refused::Conflict | Refused::NoNamespace) => {}
                    Err(Refused::Other(e)) => {
                        tracing::warn!(lease = %self.describe(), error = %e, "leader election: renewing the Lease failed");
                        return retry;
                    }
                }
            }
        }
        if let Err(e) = self.read().await {
            tracing::warn!(lease = %self.describe(), error = %e, "leader election: reading the Lease failed");
            return retry;
        }
        let stamp = stamp();
        let (path, method, lease) = match self.elector.next(self.now(&stamp)) {
            Next::Wait { until } => return self.instant(until),
            Next::Create(l) => (self.collection(), Method::POST, l),
            Next::Update(l) => (self.path(), Method::PUT, l),
        };
        match self.write(method, &path, &lease).await {
            Ok(()) => Instant::now() + self.s.renew_interval(),
            Err(Refused::Conflict) => retry,
            Err(Refused::NoNamespace) => {
                self.create_namespace().await;
                Instant::now()
            }
            Err(Refused::Other(e)) => {
                tracing::warn!(lease = %self.describe(), error = %e, "leader election: writing the Lease failed");
                retry
            }
        }
    }

    fn now<'a>(&self, stamp: &'a str) -> Now<'a> {
        Now {
            mono: self.mono(),
            stamp,
        }
    }

    async fn read(&mut self) -> Result<(), String> {
        LEASE_REQUESTS.inc();
        let a = upjson::call(&self.up, Method::GET, &self.path(), None, None)
            .await
            .map_err(|e| e.to_string())?;
        match a.status {
            StatusCode::OK => self.elector.observe(Some(&a.body), self.mono()),
            StatusCode::NOT_FOUND => self.elector.observe(None, self.mono()),
            s => return Err(format!("{s}: {}", a.message())),
        }
        Ok(())
    }

    /// Sends one write; an accepted one is recorded as this replica's.
    async fn write(&mut self, method: Method, path: &str, lease: &Value) -> Result<(), Refused> {
        LEASE_REQUESTS.inc();
        let sent = self.mono();
        let a = upjson::call(
            &self.up,
            method,
            path,
            Some("application/json"),
            Some(lease),
        )
        .await
        .map_err(|e| Refused::Other(e.to_string()))?;
        match a.status {
            s if s.is_success() => {
                self.elector.wrote(&a.body, sent);
                Ok(())
            }
            StatusCode::CONFLICT => Err(Refused::Conflict),
            StatusCode::NOT_FOUND => Err(Refused::NoNamespace),
            s => Err(Refused::Other(format!("{s}: {}", a.message()))),
        }
    }

    /// The Lease's namespace, made when it is missing (a bare test bed; the chart's release
    /// namespace exists). paddock may create namespaces (tenant namespaces) anyway.
    async fn create_namespace(&self) {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": self.s.namespace}});
        match upjson::call(
            &self.up,
            Method::POST,
            "/api/v1/namespaces",
            Some("application/json"),
            Some(&ns),
        )
        .await
        {
            Ok(a) if a.status.is_success() || a.status == StatusCode::CONFLICT => {
                tracing::info!(namespace = %self.s.namespace, "leader election: the Lease's namespace was missing; created it");
            }
            Ok(a) => {
                tracing::warn!(namespace = %self.s.namespace, status = %a.status, error = %a.message(), "leader election: cannot create the Lease's namespace");
            }
            Err(e) => {
                tracing::warn!(namespace = %self.s.namespace, error = %e, "leader election: cannot create the Lease's namespace");
            }
        }
    }

    /// Gives up the Lease if this replica holds it (client-go's `ReleaseOnCancel`), bounded
    /// by the renew deadline; a conflict is read again once.
    async fn release(&mut self) {
        let deadline = self.s.renew_deadline;
        let r = tokio::time::timeout(deadline, async {
            for _ in 0..2 {
                let Some(l) = self.elector.release(&stamp()) else {
                    return;
                };
                match self.write(Method::PUT, &self.path(), &l).await {
                    Ok(()) => {
                        tracing::info!(lease = %self.describe(), "leadership released");
                        return;
                    }
                    Err(Refused::Conflict) => {
                        if self.read().await.is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                }
            }
        })
        .await;
        if r.is_err() {
            tracing::warn!(lease = %self.describe(), "leader election: the Lease could not be released in time; another replica takes over when it expires");
        }
    }
}

/// The wall-clock time as a Kubernetes `MicroTime` (six fractional digits, UTC).
fn stamp() -> String {
    micro_time(std::time::SystemTime::now())
}

fn micro_time(t: std::time::SystemTime) -> String {
    let d = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        d.year(),
        u8::from(d.month()),
        d.day(),
        d.hour(),
        d.minute(),
        d.second(),
        d.microsecond()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn micro_times_have_six_digits() {
        let t = std::time::SystemTime::UNIX_EPOCH
            + std::time::Duration::from_micros(1_795_779_667_000_042);
        assert_eq!(super::micro_time(t), "2026-11-27T11:41:07.000042Z");
    }
}
