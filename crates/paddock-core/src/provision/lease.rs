//! Leader election on a `coordination.k8s.io/v1` Lease, the pure half, as client-go's
//! `tools/leaderelection` decides it (docs/operations.md "Leadership"): given what this replica
//! last saw of the Lease, its identity and the time, whether to create the Lease, take it,
//! renew it, or wait, and the Lease to write. The I/O (GET, create, PUT with the
//! resourceVersion, the watch) is `paddock_upstream::lease`.
//!
//! Clock skew: a replica other than the holder never compares the record's `renewTime` with
//! its own clock (the holder's clock may be anywhere). It judges expiry as client-go does,
//! from when *it* last saw the record change, on its own monotonic clock: a holder that keeps
//! writing keeps the Lease however wrong its wall clock is, and one that stops loses it
//! `leaseDurationSeconds` after the last change anyone saw. Times are passed in: nothing here
//! reads a clock.

use std::time::Duration;

use serde_json::{Value, json};

/// The API version and collection of Leases.
pub const LEASE_API_VERSION: &str = "coordination.k8s.io/v1";

/// The Lease's spec as leader election reads and writes it (client-go's
/// `LeaderElectionRecord`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaseRecord {
    /// Empty when nobody holds it (never taken, or released).
    pub holder: String,
    pub duration_seconds: u64,
    pub acquire_time: Option<String>,
    pub renew_time: Option<String>,
    pub transitions: u64,
}

impl LeaseRecord {
    /// The record of a Lease object (missing fields read as empty).
    pub fn of_lease(lease: &Value) -> LeaseRecord {
        let spec = &lease["spec"];
        let time = |k: &str| spec[k].as_str().map(str::to_string);
        LeaseRecord {
            holder: spec["holderIdentity"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            duration_seconds: spec["leaseDurationSeconds"].as_u64().unwrap_or(0),
            acquire_time: time("acquireTime"),
            renew_time: time("renewTime"),
            transitions: spec["leaseTransitions"].as_u64().unwrap_or(0),
        }
    }

    /// The Lease's `spec`.
    pub fn to_spec(&self) -> Value {
        let mut spec = json!({
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration_seconds,
            "leaseTransitions": self.transitions,
        });
        if let Some(t) = &self.acquire_time {
            spec["acquireTime"] = json!(t);
        }
        if let Some(t) = &self.renew_time {
            spec["renewTime"] = json!(t);
        }
        spec
    }
}

/// The time of one decision: `mono` on the replica's monotonic clock (any origin, the same
/// for every call), `stamp` the wall-clock time as a `MicroTime` for the record (read by
/// people; no replica judges expiry by it).
#[derive(Debug, Clone, Copy)]
pub struct Now<'a> {
    pub mono: Duration,
    pub stamp: &'a str,
}

/// What the election does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// No Lease: create this one, held by this replica.
    Create(Value),
    /// Write this Lease (the observed resourceVersion in it): renew or take.
    Update(Value),
    /// Held by another replica and not expired: look again at `until` (monotonic), or as soon
    /// as the record changes.
    Wait { until: Duration },
}

/// What this replica last saw of the Lease.
#[derive(Debug, Clone)]
struct Observed {
    /// None: there is no Lease.
    record: Option<LeaseRecord>,
    resource_version: String,
    /// When this replica saw the record change (or wrote it), on its monotonic clock.
    since: Duration,
    /// Whether `record` is this replica's own accepted write (only that makes it the leader:
    /// a record naming it that it merely read, say after a restart, must be renewed first).
    written: bool,
}

/// One replica's side of the election: its identity, the Lease's name, and what it saw.
#[derive(Debug, Clone)]
pub struct Elector {
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    observed: Option<Observed>,
}

impl Elector {
    pub fn new(namespace: &str, name: &str, identity: &str, lease_duration: Duration) -> Self {
        Elector {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            lease_duration,
            observed: None,
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether the last record seen (or written) names this replica (not yet that it leads:
    /// [`Elector::leading`]).
    pub fn is_holder(&self) -> bool {
        self.record().is_some_and(|r| r.holder == self.identity)
    }

    /// The last record seen, if there is a Lease.
    pub fn record(&self) -> Option<&LeaseRecord> {
        self.observed.as_ref().and_then(|o| o.record.as_ref())
    }

    /// Whether this replica has read the Lease (or its absence) at all.
    pub fn has_observed(&self) -> bool {
        self.observed.is_some()
    }

    /// Records what a read answered (`None`: no Lease) at `now`. The expiry clock restarts
    /// only when the record changed: a Lease read again unchanged keeps its first sighting.
    pub fn observe(&mut self, lease: Option<&Value>, now: Duration) {
        let record = lease.map(LeaseRecord::of_lease);
        let resource_version = lease
            .and_then(|l| l["metadata"]["resourceVersion"].as_str())
            .unwrap_or_default()
            .to_string();
        let (since, written) = match &self.observed {
            Some(o) if o.record == record => (o.since, o.written),
            _ => (now, false),
        };
        self.observed = Some(Observed {
            record,
            resource_version,
            since,
            written,
        });
    }

    /// Records a write of this replica that the apiserver accepted (`lease` as it answered),
    /// `sent` the time the write was sent: the holder counts its term from before the
    /// apiserver stored it, so it never believes in it longer than the others may.
    pub fn wrote(&mut self, lease: &Value, sent: Duration) {
        self.observed = Some(Observed {
            record: Some(LeaseRecord::of_lease(lease)),
            resource_version: lease["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            since: sent,
            written: true,
        });
    }

    /// Whether this replica may act as the leader at `now`: it holds the Lease and its last
    /// accepted write was sent less than `renew_deadline` ago. The deadline is shorter than
    /// the lease duration, so a holder that cannot renew stops before any other may take over.
    pub fn leading(&self, now: Duration, renew_deadline: Duration) -> bool {
        self.written_at().is_some_and(|t| now < t + renew_deadline)
    }

    /// When this replica sent its last accepted write of the Lease, if it still holds it.
    pub fn written_at(&self) -> Option<Duration> {
        self.observed
            .as_ref()
            .filter(|o| o.written && self.is_holder())
            .map(|o| o.since)
    }

    /// When the observed record expires for a replica that does not hold it: its
    /// `leaseDurationSeconds` after this replica saw it change. None without a Lease.
    pub fn expires(&self) -> Option<Duration> {
        let o = self.observed.as_ref()?;
        let r = o.record.as_ref()?;
        Some(o.since + Duration::from_secs(r.duration_seconds))
    }

    /// The decision at `now` from what was last observed (client-go's `tryAcquireOrRenew`
    /// after its read): create a missing Lease; renew one this replica holds; take one that
    /// is released (no holder) or expired; else wait for its expiry.
    pub fn next(&self, now: Now<'_>) -> Next {
        let Some(current) = self.record() else {
            return Next::Create(self.lease(None, &self.taken(0, now.stamp)));
        };
        let rv = self.observed.as_ref().map(|o| o.resource_version.as_str());
        if current.holder == self.identity {
            let mut renewed = current.clone();
            renewed.duration_seconds = self.duration_seconds();
            renewed.renew_time = Some(now.stamp.to_string());
            if renewed.acquire_time.is_none() {
                renewed.acquire_time = Some(now.stamp.to_string());
            }
            return Next::Update(self.lease(rv, &renewed));
        }
        match self.expires() {
            Some(until) if !current.holder.is_empty() && now.mono < until => Next::Wait { until },
            _ => Next::Update(self.lease(
                rv,
                &self.taken(current.transitions.saturating_add(1), now.stamp),
            )),
        }
    }

    /// The Lease that gives up this replica's hold (client-go's `ReleaseOnCancel`): no holder,
    /// a duration of one second, so that the others take it at once. None when this replica
    /// does not hold it.
    pub fn release(&self, stamp: &str) -> Option<Value> {
        let current = self.record().filter(|_| self.is_holder())?;
        let released = LeaseRecord {
            holder: String::new(),
            duration_seconds: 1,
            acquire_time: Some(stamp.to_string()),
            renew_time: Some(stamp.to_string()),
            transitions: current.transitions,
        };
        let rv = self.observed.as_ref().map(|o| o.resource_version.as_str());
        Some(self.lease(rv, &released))
    }

    fn duration_seconds(&self) -> u64 {
        self.lease_duration.as_secs().max(1)
    }

    fn taken(&self, transitions: u64, stamp: &str) -> LeaseRecord {
        LeaseRecord {
            holder: self.identity.clone(),
            duration_seconds: self.duration_seconds(),
            acquire_time: Some(stamp.to_string()),
            renew_time: Some(stamp.to_string()),
            transitions,
        }
    }

    /// The whole Lease object; with `rv`, the write is refused if another wrote since.
    fn lease(&self, rv: Option<&str>, record: &LeaseRecord) -> Value {
        let mut metadata = json!({"name": self.name, "namespace": self.namespace});
        if let Some(rv) = rv.filter(|v| !v.is_empty()) {
            metadata["resourceVersion"] = json!(rv);
        }
        json!({
            "apiVersion": LEASE_API_VERSION,
            "kind": "Lease",
            "metadata": metadata,
            "spec": record.to_spec(),
        })
    }
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
