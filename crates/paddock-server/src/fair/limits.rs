//! Per-tenant fair-share state of one replica: token buckets, in-flight requests, open
//! watches, open connections. The decisions are paddock-core's (`fairshare`); this module
//! holds the counters and hands out permits that give their slot back when dropped — for a
//! request, when its response body ends, so a streamed LIST or a watch holds its slot for as
//! long as it is sent. Limits are per replica (docs/fairshare.md says why).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use paddock_core::TenantId;
use paddock_core::fair::refusal::{Limit, retry_after_secs};
use paddock_core::fair::share::{Limits, RequestClass, TokenBucket};
use parking_lot::Mutex;

use paddock_upstream::error::ServerError;

/// The counters of one tenant.
struct Gauge {
    /// Read and write budgets.
    buckets: Mutex<Option<(TokenBucket, TokenBucket)>>,
    inflight: AtomicU32,
    watches: AtomicU32,
    connections: AtomicU32,
}

/// Every tenant's counters in this replica (one entry per tenant that has made a request
/// since start, so bounded by the number of tenants).
pub struct Limiter {
    gauges: Mutex<HashMap<TenantId, Arc<Gauge>>>,
    epoch: Instant,
}

impl Default for Limiter {
    fn default() -> Self {
        Limiter {
            gauges: Mutex::new(HashMap::new()),
            epoch: Instant::now(),
        }
    }
}

/// A held slot; dropping it gives the slot back.
pub struct Permit {
    gauge: Arc<Gauge>,
    slot: Slot,
    /// Units of the counter held: a LIST's seats (`fair_weight::seats`), otherwise 1.
    units: u32,
    /// What the request asks of the replica's fair work queue (`fair_queue.rs`): its
    /// in-flight seats, or for a watch the weight of its initial events
    /// (`fair_weight::watch_seats`); 0 for a connection.
    work: u32,
}

impl Permit {
    /// The work seats the request takes in the replica's fair work queue (none for a
    /// connection).
    pub fn work_seats(&self) -> Option<u32> {
        (self.work > 0).then_some(self.work)
    }

    /// Whether the request is a watch: it holds its work seats only until its answer's
    /// headers (its start, where the apiserver's work for it is), not for its life.
    pub fn is_watch(&self) -> bool {
        matches!(self.slot, Slot::Watch)
    }
}

#[derive(Clone, Copy)]
enum Slot {
    InFlight,
    Watch,
    Connection,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let counter = match self.slot {
            Slot::InFlight => &self.gauge.inflight,
            Slot::Watch => &self.gauge.watches,
            Slot::Connection => &self.gauge.connections,
        };
        counter.fetch_sub(self.units, Ordering::AcqRel);
    }
}

/// Takes `units` of `counter` unless that would pass `max` (0 = no limit).
fn acquire(counter: &AtomicU32, max: u32, units: u32) -> bool {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (max == 0 || n + units <= max).then_some(n + units)
        })
        .is_ok()
}

fn refuse(limit: Limit, tenant: &TenantId, value: u32, retry_after: u64) -> ServerError {
    ServerError::TooManyRequests(limit.refusal(tenant.as_str(), value, retry_after))
}

impl Limiter {
    fn gauge(&self, tenant: &TenantId) -> Arc<Gauge> {
        let mut g = self.gauges.lock();
        if let Some(x) = g.get(tenant) {
            return x.clone();
        }
        let x = Arc::new(Gauge {
            buckets: Mutex::new(None),
            inflight: AtomicU32::new(0),
            watches: AtomicU32::new(0),
            connections: AtomicU32::new(0),
        });
        g.insert(tenant.clone(), x.clone());
        x
    }

    /// Forgets tenants that no longer exist (their counters would otherwise stay for good).
    pub fn retain(&self, keep: impl Fn(&TenantId) -> bool) {
        self.gauges.lock().retain(|t, _| keep(t));
    }

    /// Admits one request of `tenant` under `limits`, or refuses it with a 429 naming the
    /// limit. The permit (if any) must live as long as the response is being sent.
    pub fn admit(
        &self,
        tenant: &TenantId,
        limits: &Limits,
        class: RequestClass,
    ) -> Result<Option<Permit>, ServerError> {
        self.admit_weighted(tenant, limits, class, 1)
    }

    /// [`Limiter::admit`] for a request that takes `seats` in-flight seats (a LIST: APF-style
    /// weight, `paddock_core::fair::weight::seats`); watches and long-running requests take one
    /// slot of their own kind whatever `seats` says (for a watch, `seats` is what it asks of
    /// the work queue until its headers: `fair_weight::watch_seats`).
    pub fn admit_weighted(
        &self,
        tenant: &TenantId,
        limits: &Limits,
        class: RequestClass,
        seats: u32,
    ) -> Result<Option<Permit>, ServerError> {
        let gauge = self.gauge(tenant);
        let seats = seats.max(1);
        // The slot first: a refused slot costs no token.
        let permit = match class {
            RequestClass::Read | RequestClass::Write => {
                if !acquire(&gauge.inflight, limits.max_inflight, seats) {
                    return Err(refuse(Limit::InFlight, tenant, limits.max_inflight, 1));
                }
                Some(Permit {
                    gauge: gauge.clone(),
                    slot: Slot::InFlight,
                    units: seats,
                    work: seats,
                })
            }
            RequestClass::Watch => {
                if !acquire(&gauge.watches, limits.max_watches, 1) {
                    // Watches end when a client stops them or at the apiserver's timeout
                    // (minutes): an immediate retry would not find a free slot.
                    return Err(refuse(Limit::Watches, tenant, limits.max_watches, 10));
                }
                Some(Permit {
                    gauge: gauge.clone(),
                    slot: Slot::Watch,
                    units: 1,
                    work: seats,
                })
            }
            RequestClass::LongRunning => None,
        };
        let (limit, rate, burst) = match class {
            RequestClass::Write => (Limit::WriteRate, limits.write_qps, limits.write_burst),
            _ => (Limit::ReadRate, limits.read_qps, limits.read_burst),
        };
        let now = self.epoch.elapsed();
        let taken = {
            let mut b = gauge.buckets.lock();
            let (read, write) = b.get_or_insert_with(|| {
                (
                    TokenBucket::full(limits.read_burst, now),
                    TokenBucket::full(limits.write_burst, now),
                )
            });
            let bucket = if limit == Limit::WriteRate {
                write
            } else {
                read
            };
            bucket.take(now, rate, burst)
        };
        match taken {
            Ok(()) => Ok(permit),
            Err(wait) => Err(refuse(limit, tenant, rate, retry_after_secs(wait))),
        }
    }

    /// Admits one more connection of `tenant`, or refuses it.
    pub fn connect(&self, tenant: &TenantId, limits: &Limits) -> Result<Permit, ServerError> {
        let gauge = self.gauge(tenant);
        if !acquire(&gauge.connections, limits.max_connections, 1) {
            return Err(refuse(
                Limit::Connections,
                tenant,
                limits.max_connections,
                1,
            ));
        }
        Ok(Permit {
            gauge,
            slot: Slot::Connection,
            units: 1,
            work: 0,
        })
    }

    /// Open connections, in-flight requests and watches of `tenant` now (tests, metrics).
    pub fn usage(&self, tenant: &TenantId) -> (u32, u32, u32) {
        let g = self.gauge(tenant);
        (
            g.connections.load(Ordering::Acquire),
            g.inflight.load(Ordering::Acquire),
            g.watches.load(Ordering::Acquire),
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn t() -> TenantId {
        TenantId::parse("acme01").unwrap()
    }

    #[test]
    fn inflight_slots_come_back_when_dropped() {
        let l = Limiter::default();
        let limits = Limits {
            max_inflight: 2,
            read_qps: 0,
            ..Limits::default()
        };
        let a = l.admit(&t(), &limits, RequestClass::Read);
        let b = l.admit(&t(), &limits, RequestClass::Write);
        assert!(a.is_ok() && b.is_ok());
        match l.admit(&t(), &limits, RequestClass::Read) {
            Err(ServerError::TooManyRequests(r)) => assert_eq!(r.limit, Limit::InFlight),
            _ => panic!("third request admitted"),
        }
        // Watches and long-running requests take no in-flight slot.
        assert!(l.admit(&t(), &limits, RequestClass::Watch).is_ok());
        assert!(l.admit(&t(), &limits, RequestClass::LongRunning).is_ok());
        drop(a);
        assert!(l.admit(&t(), &limits, RequestClass::Read).is_ok());
        assert_eq!(l.usage(&t()).1, 1);
    }

    #[test]
    fn a_list_takes_its_seats_and_gives_them_back() {
        let l = Limiter::default();
        let limits = Limits {
            max_inflight: 6,
            read_qps: 0,
            ..Limits::default()
        };
        let list = l.admit_weighted(&t(), &limits, RequestClass::Read, 5);
        assert!(list.is_ok());
        assert_eq!(l.usage(&t()).1, 5);
        // One seat left: a GET fits, a second LIST does not.
        assert!(
            l.admit_weighted(&t(), &limits, RequestClass::Read, 5)
                .is_err()
        );
        let get = l.admit(&t(), &limits, RequestClass::Read);
        assert!(get.is_ok());
        assert!(l.admit(&t(), &limits, RequestClass::Read).is_err());
        drop(list);
        assert_eq!(l.usage(&t()).1, 1);
        drop(get);
        assert_eq!(l.usage(&t()).1, 0);
    }

    #[test]
    fn reads_and_writes_have_separate_budgets() {
        let l = Limiter::default();
        let limits = Limits {
            read_qps: 1,
            read_burst: 2,
            write_qps: 1,
            write_burst: 1,
            ..Limits::default()
        };
        assert!(l.admit(&t(), &limits, RequestClass::Read).is_ok());
        assert!(l.admit(&t(), &limits, RequestClass::Watch).is_ok());
        match l.admit(&t(), &limits, RequestClass::Read) {
            Err(ServerError::TooManyRequests(r)) => {
                assert_eq!(r.limit, Limit::ReadRate);
                assert_eq!(r.retry_after, 1);
            }
            _ => panic!("read over budget admitted"),
        }
        // The write budget is untouched by the reads.
        assert!(l.admit(&t(), &limits, RequestClass::Write).is_ok());
        assert!(l.admit(&t(), &limits, RequestClass::Write).is_err());
    }

    #[test]
    fn connections_are_counted_per_tenant() {
        let l = Limiter::default();
        let limits = Limits {
            max_connections: 1,
            ..Limits::default()
        };
        let c = l.connect(&t(), &limits);
        assert!(c.is_ok());
        assert!(l.connect(&t(), &limits).is_err());
        let other = TenantId::parse("other1").unwrap();
        assert!(l.connect(&other, &limits).is_ok());
        drop(c);
        assert!(l.connect(&t(), &limits).is_ok());
    }
}
