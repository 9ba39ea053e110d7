//! Who goes next: the pure decisions of a replica's tenant-fair work queue
//! (docs/fairshare.md "Fair queue").
//!
//! A replica has a budget of work seats (`capacity`). A tenant's request takes its seats (1,
//! or a LIST's weight, `fair_weight::seats`) while it is served. While the budget has room and
//! nobody waits, a request is admitted at once, whoever sends it: a tenant alone on a replica
//! may use every seat (the queue is work-conserving). Otherwise it waits in its tenant's FIFO.
//!
//! **Who goes next: the tenant that has used the least work** (weighted fair queuing, as the
//! Linux CFS scheduler orders tasks by virtual run time). Each tenant has a virtual time: the
//! work its finished requests actually used (the caller measures it — time spent in the
//! request's polls — and passes it to [`FairQueue::release`]), plus an estimate for each
//! request it has in progress (the tenant's running mean). Whenever seats free, the waiting
//! tenant with the lowest virtual time is served (ties: the oldest request). A tenant that
//! comes back after being idle starts at the lowest virtual time of the busy tenants (CFS's
//! `min_vruntime`), so idling banks no credit; a tenant sending one cheap request now and then
//! is therefore served before a tenant flooding expensive LISTs, whatever the arrival order.
//!
//! **Leases.** Seats are not taken back while a request works, but a request may stop
//! working and wait on its client (a body sent a byte at a time, a client that stops reading
//! a large answer). So a grant older than the lease (`lease`) is revoked when a waiting
//! request needs its seats: the request goes on without them (its work is still charged when
//! it ends). A slow client therefore holds seats for at most one lease while others wait.
//!
//! **Reserve.** Work-conservation has one cost for a light tenant: when a flood holds every
//! seat, the light tenant's request, though first in line, waits for one of the flood's
//! requests to end. So the last `reserve` seats ([`FairQueue::with_reserve`]) go only to a
//! light tenant: one whose seats, this request's included, fit in the reserve (or that holds
//! none). A busy tenant fills the budget up to `capacity - reserve`; a tenant making a GET
//! now and then, even with one or two in progress, finds a seat at once. A lone busy tenant
//! thus keeps all but the reserve, and a request heavier than that still runs once its
//! tenant holds nothing else.
//!
//! **Alone, a tenant is not held to the budget** ([`FairQueue::unbounded_when_alone`]). The
//! budget shares the replica among tenants; a tenant with nobody to share with (no other
//! tenant holds seats, waits, or made a request within [`ACTIVE_WINDOW`]) is admitted at once
//! whatever the seats in use (its own `maxInflight` bounds it). Once another tenant is active
//! the budget applies again: the overshoot drains as the lone tenant's requests end.
//!
//! **Pacing: heavy tenants yield to light ones** ([`FairQueue::with_pace`]). Every tenant's
//! use is metered as *seat time* (seats × time held, as APF charges width × duration). A
//! tenant whose seat time over the last second or so (an exponential average) is under half
//! the pace (`pace` % of one seat), or under a quarter of the busiest active tenant's, is
//! *light*; others are *heavy*. While a light tenant is
//! active, a heavy tenant's requests are admitted at the pace with GCRA's arithmetic (a
//! theoretical arrival time that each admission moves forward by its estimated seat time ÷
//! pace, corrected at its end; a request may start at most [`PACE_SLACK`] early): its
//! admissions are spread out instead of arriving in bursts, and what it keeps busy upstream
//! is bounded by the pace. A light tenant is never held back. Heavy tenants among themselves
//! are not paced (the budget and the virtual times share the replica among them,
//! work-conserving); a heavy tenant's schedule runs at most [`PACE_MEMORY`] ahead, so past
//! use costs it at most that much wait when a light tenant appears.
//!
//! The caller does the waiting (tokio in paddock-server); this type only decides. It holds no
//! clock: `now` is the caller's monotonic time since any fixed origin, and a wait's deadline is
//! the caller's, who then [`FairQueue::cancel`]s the ticket.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use smallvec::SmallVec;

/// Waiting requests admitted by a change of the queue, in order: rarely more than one or two,
/// and made on every request (inline, not allocated).
pub type Admitted<K> = SmallVec<[(K, Ticket); 2]>;

/// A request's place: handed out by [`FairQueue::arrive`], released by [`FairQueue::release`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(u64);

/// What happens to an arriving request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Its seats are taken; release the ticket with [`FairQueue::release`] when it ends.
    Admitted(Ticket),
    /// It waits; a later `release`, `cancel` or `poke` names it among the admitted.
    Queued(Ticket),
}

impl Arrival {
    pub fn ticket(self) -> Ticket {
        match self {
            Arrival::Admitted(t) | Arrival::Queued(t) => t,
        }
    }
}

/// What a cancelled ticket was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancelled<K> {
    /// It was still waiting and is gone; the requests this admitted (its place may have held
    /// them back).
    Removed(Admitted<K>),
    /// It had been admitted already: the caller must release it.
    WasAdmitted,
}

/// The estimate of a request's work before a tenant has a running mean: about one small GET.
const FIRST_ESTIMATE_NS: u64 = 100_000;

/// How long after its last request a tenant still counts as active: for the lone-tenant rule
/// and for pacing (a light tenant making a request every few hundred ms is active throughout).
pub const ACTIVE_WINDOW: Duration = Duration::from_secs(1);
/// How early a paced tenant's request may start against its schedule (GCRA's tolerance).
pub const PACE_SLACK: Duration = Duration::from_millis(20);
/// A tenant is light while its recent seat time (exponential average over this long, in
/// seat-seconds per second) is under `LIGHT_SHARE` of the pace.
const USE_WINDOW_SECS: f64 = 1.0;
const LIGHT_SHARE: f64 = 0.5;
/// A tenant is also light while its recent seat time is under this share of the busiest
/// active tenant's. Seat time includes the wait for the apiserver, which a flood lengthens:
/// a tenant making 20 small GETs a second, light on its own (0.06 of a seat), held each GET
/// 36 ms beside an unpaced flood on a loaded machine (0.7 of a seat), crossed the pace's
/// line, and as nobody was light any more the flood stayed unpaced for the whole minute
/// (docs/performance/noisy-neighbour.md "Session 11"). Beside the flood it is still light.
/// (Its cost: of two busy tenants more than fourfold apart, the smaller counts as light:
/// docs/fairshare.md.)
const RELATIVE_LIGHT: f64 = 0.25;
/// The most a tenant may be ahead of its pace: past heavy use (alone, or while only heavy
/// tenants were active) costs it at most this much wait when a light tenant appears.
pub const PACE_MEMORY: Duration = Duration::from_millis(100);
/// The estimate of how long a request holds its seats before a tenant has a running mean.
const FIRST_HOLD_NS: u64 = 5_000_000;

/// What the queue remembers of a tenant between its requests: when it last arrived, and its
/// pace (docs: "Pacing" above).
#[derive(Debug, Clone, Copy)]
struct Recent {
    seen: Duration,
    /// GCRA's theoretical arrival time: how far the tenant's seat time has run ahead of its pace.
    tat: Duration,
    /// Running mean of how long one request holds its seats, in ns.
    hold: u64,
    /// Seat time used by ended requests, in seat-seconds, decaying over [`USE_WINDOW_SECS`]
    /// from `used_at`.
    used: f64,
    used_at: Duration,
}

impl Recent {
    /// The recent seat time at `now` (seat-seconds per [`USE_WINDOW_SECS`]).
    fn use_at(&self, now: Duration) -> f64 {
        let age = now.saturating_sub(self.used_at).as_secs_f64();
        self.used * (-age / USE_WINDOW_SECS).exp()
    }
}

#[derive(Debug, Default)]
struct Flow {
    /// Seats held by this tenant's admitted, unrevoked requests.
    held: u32,
    /// Admitted requests not yet released (revoked ones included).
    grants: u32,
    /// Waiting requests, oldest first: (ticket, seats).
    waiting: VecDeque<(Ticket, u32)>,
    /// Work used by finished requests, in ns, from the floor the tenant started at.
    vtime: u64,
    /// Estimated work of the admitted requests not yet released, in ns.
    pending: u64,
    /// Running mean of one request's work, in ns (0: none measured yet).
    mean: u64,
}

impl Flow {
    fn key(&self) -> u64 {
        self.vtime.saturating_add(self.pending)
    }

    fn estimate(&self) -> u64 {
        if self.mean == 0 {
            FIRST_ESTIMATE_NS
        } else {
            self.mean
        }
    }
}

#[derive(Debug)]
struct Grant<K> {
    tenant: K,
    seats: u32,
    since: Duration,
    estimate: u64,
    /// Seat time charged to the tenant's pace at admission (seats × its mean hold), in ns.
    paced: u64,
    revoked: bool,
}

/// The queue's state: seats in use, each tenant's flow and each admitted request. Tenants with
/// nothing held and nothing waiting are forgotten, so its size is bounded by the requests in
/// flight.
#[derive(Debug)]
pub struct FairQueue<K> {
    capacity: u32,
    /// The last seats, kept for light tenants ([`FairQueue::room`]).
    reserve: u32,
    lease: Duration,
    in_use: u32,
    flows: HashMap<K, Flow>,
    grants: HashMap<Ticket, Grant<K>>,
    /// The virtual time a tenant (re)starts at: never below the busy tenants' lowest.
    floor: u64,
    next: u64,
    revoked: u64,
    /// A tenant alone is admitted past the budget ([`FairQueue::unbounded_when_alone`]).
    alone_unbounded: bool,
    /// Percent of one seat a heavy tenant is paced to while a light one is active (0: off).
    pace: u32,
    /// Tenants seen recently (within [`ACTIVE_WINDOW`], or still ahead of their pace).
    recent: HashMap<K, Recent>,
    last_prune: Duration,
}

impl<K: Eq + Hash + Clone> FairQueue<K> {
    /// A queue of `capacity` seats (at least 1) whose grants may be revoked after `lease`.
    pub fn new(capacity: u32, lease: Duration) -> Self {
        FairQueue {
            capacity: capacity.max(1),
            reserve: 0,
            lease,
            in_use: 0,
            flows: HashMap::new(),
            grants: HashMap::new(),
            floor: 0,
            next: 0,
            revoked: 0,
            alone_unbounded: false,
            pace: 0,
            recent: HashMap::new(),
            last_prune: Duration::ZERO,
        }
    }

    /// A tenant with no other tenant active is admitted at once, past the budget.
    pub fn unbounded_when_alone(mut self) -> Self {
        self.alone_unbounded = true;
        self
    }

    /// While a light tenant is active, heavy tenants are paced to `percent` % of one seat's
    /// time (0: no pacing).
    pub fn with_pace(mut self, percent: u32) -> Self {
        self.pace = percent;
        self
    }

    /// Keeps the last `reserve` seats for light tenants (at most all but one: a busy tenant
    /// always has a seat to use).
    pub fn with_reserve(mut self, reserve: u32) -> Self {
        self.reserve = reserve.min(self.capacity - 1);
        self
    }

    /// The seats a request of `seats` takes: at least 1, at most the budget (a request
    /// heavier than that runs alone rather than never).
    pub fn weight(&self, seats: u32) -> u32 {
        seats.clamp(1, self.capacity)
    }

    /// A request of `tenant` weighing `seats` arrives at `now`. Also returns the waiting
    /// requests admitted meanwhile (leases that expired since the last call).
    pub fn arrive(&mut self, tenant: &K, seats: u32, now: Duration) -> (Arrival, Admitted<K>) {
        let seats = self.weight(seats);
        let ticket = Ticket(self.next);
        self.next += 1;
        self.note(tenant, now);
        if !self.flows.contains_key(tenant) {
            let floor = self.raise_floor();
            let flow = Flow {
                vtime: floor,
                ..Flow::default()
            };
            self.flows.insert(tenant.clone(), flow);
        }
        if let Some(f) = self.flows.get_mut(tenant) {
            f.waiting.push_back((ticket, seats));
        }
        let mut others = self.dispatch(now);
        let before = others.len();
        others.retain(|(_, t)| *t != ticket);
        let arrival = if others.len() < before {
            Arrival::Admitted(ticket)
        } else {
            Arrival::Queued(ticket)
        };
        (arrival, others)
    }

    /// An admitted request ended at `now`, having used `work`; returns the waiting requests
    /// this admits, in order. An unknown ticket (released twice) changes nothing.
    pub fn release(&mut self, ticket: Ticket, work: Duration, now: Duration) -> Admitted<K> {
        let Some(g) = self.grants.remove(&ticket) else {
            return Admitted::new();
        };
        if !g.revoked {
            self.in_use = self.in_use.saturating_sub(g.seats);
        }
        self.settle_pace(&g, now);
        if let Some(f) = self.flows.get_mut(&g.tenant) {
            let work = u64::try_from(work.as_nanos()).unwrap_or(u64::MAX);
            f.pending = f.pending.saturating_sub(g.estimate);
            f.vtime = f.vtime.saturating_add(work);
            f.mean = if f.mean == 0 {
                work.max(1)
            } else {
                (f.mean / 8 * 7).saturating_add(work / 8).max(1)
            };
            f.grants = f.grants.saturating_sub(1);
            if !g.revoked {
                f.held = f.held.saturating_sub(g.seats);
            }
        }
        self.forget_if_idle(&g.tenant);
        self.dispatch(now)
    }

    /// A waiting request gives up (its client went away, or its wait's deadline passed).
    pub fn cancel(&mut self, tenant: &K, ticket: Ticket, now: Duration) -> Cancelled<K> {
        let Some(f) = self.flows.get_mut(tenant) else {
            return Cancelled::WasAdmitted;
        };
        let Some(at) = f.waiting.iter().position(|(t, _)| *t == ticket) else {
            return Cancelled::WasAdmitted;
        };
        f.waiting.remove(at);
        self.forget_if_idle(tenant);
        Cancelled::Removed(self.dispatch(now))
    }

    /// Time passed: revokes expired leases if a waiting request needs their seats; returns
    /// the requests this admits. The caller pokes while requests wait (every lease or so).
    pub fn poke(&mut self, now: Duration) -> Admitted<K> {
        self.dispatch(now)
    }

    /// Seats in use and requests waiting (for metrics).
    pub fn load(&self) -> (u32, usize) {
        let waiting = self.flows.values().map(|f| f.waiting.len()).sum();
        (self.in_use, waiting)
    }

    /// Grants revoked since the start (for metrics).
    pub fn revoked(&self) -> u64 {
        self.revoked
    }

    /// Seats `tenant` holds (for tests and metrics).
    pub fn held_by(&self, tenant: &K) -> u32 {
        self.flows.get(tenant).map_or(0, |f| f.held)
    }

    fn forget_if_idle(&mut self, tenant: &K) {
        if self
            .flows
            .get(tenant)
            .is_some_and(|f| f.grants == 0 && f.waiting.is_empty())
        {
            self.flows.remove(tenant);
        }
    }

    /// The floor, raised to the lowest virtual time of the tenants known now.
    fn raise_floor(&mut self) -> u64 {
        if let Some(low) = self.flows.values().map(|f| f.vtime).min() {
            self.floor = self.floor.max(low);
        }
        self.floor
    }

    /// Admits waiting requests while the next one fits, revoking expired leases to make it
    /// fit. The next one is the head of the waiting tenant with the lowest virtual time (ties:
    /// the older head) among those not held back by their pace. When it does not fit, nobody
    /// behind it is admitted either, so a heavy request is not starved by light ones. A tenant
    /// alone (with [`FairQueue::unbounded_when_alone`]) is admitted whatever the seats in use.
    fn dispatch(&mut self, now: Duration) -> Admitted<K> {
        let mut admitted = Admitted::new();
        loop {
            let line = self.light_line(now);
            let paced = self.pacing_applies(now, line);
            let next = self
                .flows
                .iter()
                .filter(|(k, _)| !paced || self.within_pace(k, now, line))
                .filter_map(|(k, f)| f.waiting.front().map(|(t, s)| (f.key(), *t, *s, k)))
                .min_by_key(|(key, ticket, _, _)| (*key, *ticket))
                .map(|(_, t, s, k)| (k.clone(), t, s));
            let Some((tenant, ticket, seats)) = next else {
                break;
            };
            if !(self.alone_unbounded && self.alone(&tenant, now)) {
                while self.in_use + seats > self.room(&tenant, seats) && self.revoke_one(now) {}
                if self.in_use + seats > self.room(&tenant, seats) {
                    break;
                }
            }
            let paced = self.charge_pace(&tenant, seats, now);
            self.in_use += seats;
            let Some(f) = self.flows.get_mut(&tenant) else {
                break;
            };
            f.waiting.pop_front();
            f.held += seats;
            f.grants += 1;
            let estimate = f.estimate();
            f.pending = f.pending.saturating_add(estimate);
            let grant = Grant {
                tenant: tenant.clone(),
                seats,
                since: now,
                estimate,
                paced,
                revoked: false,
            };
            self.grants.insert(ticket, grant);
            admitted.push((tenant, ticket));
        }
        admitted
    }

    /// Records that `tenant` made a request at `now`; now and then forgets the tenants that
    /// are neither active nor ahead of their pace.
    fn note(&mut self, tenant: &K, now: Duration) {
        if now.saturating_sub(self.last_prune) >= ACTIVE_WINDOW {
            let flows = &self.flows;
            self.recent.retain(|k, r| {
                flows.contains_key(k) || now.saturating_sub(r.seen) < ACTIVE_WINDOW || r.tat > now
            });
            self.last_prune = now;
        }
        match self.recent.get_mut(tenant) {
            Some(r) => r.seen = now,
            None => {
                let r = Recent {
                    seen: now,
                    tat: now,
                    hold: 0,
                    used: 0.0,
                    used_at: now,
                };
                self.recent.insert(tenant.clone(), r);
            }
        }
    }

    fn is_active(&self, tenant: &K, r: &Recent, now: Duration) -> bool {
        now.saturating_sub(r.seen) < ACTIVE_WINDOW || self.flows.contains_key(tenant)
    }

    /// Whether no other tenant than `tenant` holds seats, waits, or was active recently.
    fn alone(&self, tenant: &K, now: Duration) -> bool {
        !self.flows.keys().any(|k| k != tenant)
            && !self
                .recent
                .iter()
                .any(|(k, r)| k != tenant && now.saturating_sub(r.seen) < ACTIVE_WINDOW)
    }

    /// The recent seat time under which a tenant is light at `now`: half the pace, or a
    /// quarter of the busiest active tenant's ([`RELATIVE_LIGHT`]), whichever is higher.
    fn light_line(&self, now: Duration) -> f64 {
        let busiest = self
            .recent
            .iter()
            .filter(|(k, r)| self.is_active(k, r, now))
            .map(|(_, r)| r.use_at(now))
            .fold(0.0, f64::max);
        (f64::from(self.pace) / 100.0 * LIGHT_SHARE * USE_WINDOW_SECS).max(RELATIVE_LIGHT * busiest)
    }

    /// Whether a tenant is light: its recent seat time is under the `line` ([`Self::light_line`]).
    fn is_light(r: &Recent, now: Duration, line: f64) -> bool {
        r.use_at(now) < line
    }

    /// Whether heavy tenants are paced now: pacing is on and a light tenant is active.
    fn pacing_applies(&self, now: Duration, line: f64) -> bool {
        self.pace > 0
            && self
                .recent
                .iter()
                .any(|(k, r)| Self::is_light(r, now, line) && self.is_active(k, r, now))
    }

    /// Whether `tenant` may go while pacing applies: it is light, or its schedule allows it
    /// (at most [`PACE_SLACK`] early).
    fn within_pace(&self, tenant: &K, now: Duration, line: f64) -> bool {
        self.recent
            .get(tenant)
            .is_none_or(|r| Self::is_light(r, now, line) || r.tat <= now + PACE_SLACK)
    }

    /// The schedule time (ns) that `seat_ns` of seat time takes at the pace.
    fn paced_ns(&self, seat_ns: u64) -> u64 {
        seat_ns.saturating_mul(100) / u64::from(self.pace.max(1))
    }

    /// Moves `tenant`'s pace forward by the estimated seat time of a request of `seats`
    /// admitted at `now` (at most [`PACE_MEMORY`] ahead); returns that seat time, in ns.
    fn charge_pace(&mut self, tenant: &K, seats: u32, now: Duration) -> u64 {
        if self.pace == 0 {
            return 0;
        }
        let Some(hold) = self.recent.get(tenant).map(|r| r.hold) else {
            return 0;
        };
        let hold = if hold == 0 { FIRST_HOLD_NS } else { hold };
        let seat_ns = u64::from(seats).saturating_mul(hold);
        let ahead = Duration::from_nanos(self.paced_ns(seat_ns));
        if let Some(r) = self.recent.get_mut(tenant) {
            r.tat = (r.tat.max(now) + ahead).min(now + PACE_MEMORY);
        }
        seat_ns
    }

    /// At a request's end, corrects its tenant's pace by the seat time it really used (time
    /// held, at most a lease, × seats) against the estimate charged, and updates the tenant's
    /// mean hold.
    fn settle_pace(&mut self, g: &Grant<K>, now: Duration) {
        if self.pace == 0 {
            return;
        }
        let held = now.saturating_sub(g.since).min(self.lease);
        let held_ns = u64::try_from(held.as_nanos()).unwrap_or(u64::MAX);
        let used = u64::from(g.seats).saturating_mul(held_ns);
        let (more, less) = (
            self.paced_ns(used.saturating_sub(g.paced)),
            self.paced_ns(g.paced.saturating_sub(used)),
        );
        if let Some(r) = self.recent.get_mut(&g.tenant) {
            r.used = r.use_at(now) + used as f64 / 1e9;
            r.used_at = now;
            r.tat = (r.tat + Duration::from_nanos(more))
                .saturating_sub(Duration::from_nanos(less))
                .min(now + PACE_MEMORY);
            r.hold = if r.hold == 0 {
                held_ns.max(1)
            } else {
                (r.hold / 8 * 7).saturating_add(held_ns / 8).max(1)
            };
        }
    }

    /// Whether requests of `tenant` arriving at `now` are paced: a light tenant is active and
    /// `tenant` is heavy. Never for a tenant alone, a light tenant, one the queue has not
    /// seen, or with pacing off.
    pub fn is_paced(&self, tenant: &K, now: Duration) -> bool {
        let line = self.light_line(now);
        self.recent
            .get(tenant)
            .is_some_and(|r| !Self::is_light(r, now, line) && self.pacing_applies(now, line))
    }

    /// When a tenant held back by its pace may go next (the caller wakes the queue then with
    /// [`FairQueue::poke`]); `None` when nobody waits for their pace.
    pub fn next_due(&self, now: Duration) -> Option<Duration> {
        let line = self.light_line(now);
        if !self.pacing_applies(now, line) {
            return None;
        }
        self.flows
            .iter()
            .filter(|(_, f)| !f.waiting.is_empty())
            .filter_map(|(k, _)| self.recent.get(k))
            .filter(|r| r.tat > now + PACE_SLACK && !Self::is_light(r, now, line))
            .map(|r| r.tat - PACE_SLACK)
            .min()
    }

    /// The seats a request of `tenant` weighing `seats` may bring the queue's use up to: the
    /// whole budget for a light tenant (its seats with this request's fit in the reserve, or
    /// it holds none), all but the reserve for a busy one.
    fn room(&self, tenant: &K, seats: u32) -> u32 {
        let held = self.flows.get(tenant).map_or(0, |f| f.held);
        if held == 0 || held + seats <= self.reserve {
            self.capacity
        } else {
            self.capacity - self.reserve
        }
    }

    /// Takes back the seats of the oldest grant held past the lease; false when none is.
    fn revoke_one(&mut self, now: Duration) -> bool {
        let lease = self.lease;
        let oldest = self
            .grants
            .iter()
            .filter(|(_, g)| !g.revoked && now.saturating_sub(g.since) >= lease)
            .min_by_key(|(t, g)| (g.since, **t))
            .map(|(t, _)| *t);
        let Some(g) = oldest.and_then(|t| self.grants.get_mut(&t)) else {
            return false;
        };
        g.revoked = true;
        self.in_use = self.in_use.saturating_sub(g.seats);
        if let Some(f) = self.flows.get_mut(&g.tenant) {
            f.held = f.held.saturating_sub(g.seats);
        }
        self.revoked += 1;
        true
    }
}

#[cfg(test)]
#[path = "fair_queue_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "fair_queue_pace_tests.rs"]
mod pace_tests;
