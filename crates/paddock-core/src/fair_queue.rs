//! Who goes next: the pure decisions of a replica's tenant-fair work queue
//! (docs/fairshare.md "Fair queue").
//!
//! A replica has a budget of work seats (`capacity`). A tenant's request takes its seats (1,
//! or a LIST's weight, `fair_weight::seats`) for as long as it is served. While the budget has
//! room and nobody waits, a request is admitted at once; otherwise it waits in its tenant's
//! FIFO, and every time seats free the tenant holding the **fewest seats** among those waiting
//! is served next (ties: the oldest waiting request). So a tenant with one request is admitted
//! before the 30th request of a tenant with many, whatever their arrival order: each tenant
//! gets an equal share of the budget under contention (max-min fairness, as APF's fair
//! queuing gives each flow an equal share of a priority level's seats).
//!
//! One tenant may hold at most three quarters of the budget ([`FairQueue::tenant_cap`]),
//! even alone: seats are not taken back from a request once given, so without a reserve a
//! tenant holding every seat with requests that never end (a body sent a byte at a time)
//! would make every other tenant wait for its requests to end.
//!
//! The caller does the waiting (tokio in paddock-server); this type only decides. It holds no
//! clock: a wait's deadline is the caller's, who then [`FairQueue::cancel`]s the ticket.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// One waiting request, as handed out by [`FairQueue::arrive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(u64);

/// What happens to an arriving request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Its seats are taken; release them with [`FairQueue::release`] when it ends.
    Admitted,
    /// It waits; a later `release` or `cancel` names it among the admitted.
    Queued(Ticket),
}

/// What a cancelled ticket was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancelled<K> {
    /// It was still waiting and is gone; the requests this admitted (its place may have held
    /// them back).
    Removed(Vec<(K, Ticket)>),
    /// It had been admitted already: the caller holds its seats and must release them.
    WasAdmitted,
}

#[derive(Debug, Default)]
struct Flow {
    /// Seats held by this tenant's admitted requests.
    in_use: u32,
    /// Waiting requests, oldest first: (ticket, seats).
    waiting: VecDeque<(Ticket, u32)>,
}

/// The queue's state: seats in use, and each tenant's seats and waiting requests. Tenants
/// with nothing held and nothing waiting are forgotten, so its size is bounded by the
/// requests in flight.
#[derive(Debug)]
pub struct FairQueue<K> {
    capacity: u32,
    in_use: u32,
    flows: HashMap<K, Flow>,
    next: u64,
}

impl<K: Eq + Hash + Clone> FairQueue<K> {
    /// A queue of `capacity` seats (at least 1).
    pub fn new(capacity: u32) -> Self {
        FairQueue {
            capacity: capacity.max(1),
            in_use: 0,
            flows: HashMap::new(),
            next: 0,
        }
    }

    /// The most seats one tenant holds at once: three quarters of the budget (all of a
    /// budget under 4), so others always find seats a tenant cannot take.
    pub fn tenant_cap(&self) -> u32 {
        (self.capacity - self.capacity / 4).max(1)
    }

    /// The seats a request of `seats` takes: at least 1, at most a tenant's cap (a request
    /// heavier than that runs alone rather than never).
    pub fn weight(&self, seats: u32) -> u32 {
        seats.clamp(1, self.tenant_cap())
    }

    /// A request of `tenant` weighing `seats` arrives (pass the same `seats` to `release`).
    pub fn arrive(&mut self, tenant: &K, seats: u32) -> Arrival {
        let seats = self.weight(seats);
        let ticket = Ticket(self.next);
        self.next += 1;
        self.flows
            .entry(tenant.clone())
            .or_default()
            .waiting
            .push_back((ticket, seats));
        // Before this arrival nothing waiting could be admitted, so this admits the new
        // request or nobody.
        if self.dispatch().is_empty() {
            Arrival::Queued(ticket)
        } else {
            Arrival::Admitted
        }
    }

    /// An admitted request of `tenant` weighing `seats` ended; returns the waiting requests
    /// this admits, in order.
    pub fn release(&mut self, tenant: &K, seats: u32) -> Vec<(K, Ticket)> {
        let seats = self.weight(seats);
        self.in_use = self.in_use.saturating_sub(seats);
        if let Some(f) = self.flows.get_mut(tenant) {
            f.in_use = f.in_use.saturating_sub(seats);
        }
        self.forget_if_idle(tenant);
        self.dispatch()
    }

    /// A waiting request gives up (its client went away, or its wait's deadline passed).
    pub fn cancel(&mut self, tenant: &K, ticket: Ticket) -> Cancelled<K> {
        let Some(f) = self.flows.get_mut(tenant) else {
            return Cancelled::WasAdmitted;
        };
        let Some(at) = f.waiting.iter().position(|(t, _)| *t == ticket) else {
            return Cancelled::WasAdmitted;
        };
        f.waiting.remove(at);
        self.forget_if_idle(tenant);
        Cancelled::Removed(self.dispatch())
    }

    /// Seats in use and requests waiting (for metrics).
    pub fn load(&self) -> (u32, usize) {
        let waiting = self.flows.values().map(|f| f.waiting.len()).sum();
        (self.in_use, waiting)
    }

    /// Seats `tenant` holds (for tests and metrics).
    pub fn held_by(&self, tenant: &K) -> u32 {
        self.flows.get(tenant).map_or(0, |f| f.in_use)
    }

    fn forget_if_idle(&mut self, tenant: &K) {
        if self
            .flows
            .get(tenant)
            .is_some_and(|f| f.in_use == 0 && f.waiting.is_empty())
        {
            self.flows.remove(tenant);
        }
    }

    /// Admits waiting requests while the next one fits. The next one is the head of the
    /// waiting tenant holding the fewest seats (ties: the older head), among tenants it would
    /// not take past their cap. When it does not fit, nobody behind it is admitted either, so
    /// a heavy request is not starved by light ones.
    fn dispatch(&mut self) -> Vec<(K, Ticket)> {
        let cap = self.tenant_cap();
        let mut admitted = Vec::new();
        loop {
            let next = self
                .flows
                .iter()
                .filter_map(|(k, f)| f.waiting.front().map(|(t, s)| (f.in_use, *t, *s, k)))
                .filter(|(held, _, seats, _)| held + seats <= cap)
                .min_by_key(|(held, ticket, _, _)| (*held, *ticket))
                .map(|(_, t, s, k)| (k.clone(), t, s));
            let Some((tenant, ticket, seats)) = next else {
                break;
            };
            if self.in_use + seats > self.capacity {
                break;
            }
            self.in_use += seats;
            if let Some(f) = self.flows.get_mut(&tenant) {
                f.waiting.pop_front();
                f.in_use += seats;
            }
            admitted.push((tenant, ticket));
        }
        admitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(a: Arrival) -> Ticket {
        match a {
            Arrival::Queued(t) => t,
            Arrival::Admitted => panic!("admitted, expected to wait"),
        }
    }

    #[test]
    fn admits_at_once_while_there_is_room_and_the_tenant_is_under_its_cap() {
        let mut q = FairQueue::new(8);
        assert_eq!(q.tenant_cap(), 6);
        assert_eq!(q.arrive(&"a", 1), Arrival::Admitted);
        assert_eq!(q.arrive(&"a", 5), Arrival::Admitted);
        // "a" holds its cap: its next request waits though two seats are free...
        let t = queued(q.arrive(&"a", 1));
        assert_eq!(q.load(), (6, 1));
        // ...which another tenant gets at once.
        assert_eq!(q.arrive(&"b", 2), Arrival::Admitted);
        assert_eq!(q.release(&"a", 5), vec![("a", t)]);
        assert_eq!(q.load(), (4, 0));
    }

    #[test]
    fn a_tenant_with_fewer_seats_goes_before_a_flood() {
        let mut q = FairQueue::new(4);
        q.arrive(&"noisy", 1);
        q.arrive(&"noisy", 1);
        q.arrive(&"quiet", 1);
        q.arrive(&"noisy", 1);
        // The noisy tenant queues 30 more before the quiet one asks again.
        let flood: Vec<Ticket> = (0..30).map(|_| queued(q.arrive(&"noisy", 1))).collect();
        let quiet = queued(q.arrive(&"quiet", 1));
        // The first seat to free goes to the quiet tenant, holding fewer.
        assert_eq!(q.release(&"noisy", 1), vec![("quiet", quiet)]);
        // The next to the noisy tenant's oldest waiting request.
        assert_eq!(q.release(&"quiet", 1), vec![("noisy", flood[0])]);
    }

    #[test]
    fn shares_the_budget_equally_under_contention() {
        let mut q = FairQueue::new(8);
        for _ in 0..6 {
            q.arrive(&"a", 1);
        }
        for _ in 0..10 {
            q.arrive(&"a", 1);
            q.arrive(&"b", 1);
        }
        // Two seats were free for "b"; every seat freed by "a" goes to "b" until both hold four.
        assert_eq!((q.held_by(&"a"), q.held_by(&"b")), (6, 2));
        for _ in 0..2 {
            let got = q.release(&"a", 1);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].0, "b");
        }
        assert_eq!((q.held_by(&"a"), q.held_by(&"b")), (4, 4));
        // From then on a freed seat goes back to the tenant that freed it: neither gains.
        assert_eq!(q.release(&"a", 1)[0].0, "a");
        assert_eq!(q.release(&"b", 1)[0].0, "b");
        assert_eq!((q.held_by(&"a"), q.held_by(&"b")), (4, 4));
    }

    #[test]
    fn a_heavy_request_is_not_starved_by_light_ones() {
        let mut q = FairQueue::new(8);
        for _ in 0..6 {
            q.arrive(&"a", 1);
        }
        q.arrive(&"d", 2);
        let heavy = queued(q.arrive(&"b", 3));
        let light = queued(q.arrive(&"c", 1));
        // "b" (oldest among tenants holding none) does not fit yet, and "c" waits behind it
        // rather than overtaking.
        assert_eq!(q.release(&"a", 1), vec![]);
        assert_eq!(q.release(&"a", 1), vec![]);
        assert_eq!(q.release(&"a", 1), vec![("b", heavy)]);
        assert_eq!(q.release(&"a", 1), vec![("c", light)]);
    }

    #[test]
    fn weights_are_bounded_by_the_tenant_cap() {
        let mut q = FairQueue::new(4);
        assert_eq!(q.arrive(&"a", 10), Arrival::Admitted);
        assert_eq!(q.load(), (3, 0));
        assert_eq!(q.arrive(&"b", 0), Arrival::Admitted);
        assert_eq!(q.load(), (4, 0));
        let t = queued(q.arrive(&"a", 1));
        assert_eq!(q.release(&"a", 10), vec![("a", t)]);
        assert_eq!(q.load(), (2, 0));
    }

    #[test]
    fn cancelling_tells_a_waiting_request_from_an_admitted_one() {
        let mut q = FairQueue::new(1);
        q.arrive(&"a", 1);
        let b = queued(q.arrive(&"b", 1));
        let c = queued(q.arrive(&"c", 1));
        assert_eq!(q.cancel(&"b", b), Cancelled::Removed(vec![]));
        assert_eq!(q.release(&"a", 1), vec![("c", c)]);
        // "c" was admitted: cancelling it now tells the caller to release its seat.
        assert_eq!(q.cancel(&"c", c), Cancelled::WasAdmitted);
        assert_eq!(q.release(&"c", 1), vec![]);
        assert_eq!(q.load(), (0, 0));
        assert!(q.flows.is_empty(), "idle tenants are forgotten");
    }

    #[test]
    fn cancelling_a_blocking_head_admits_those_behind() {
        let mut q = FairQueue::new(4);
        q.arrive(&"a", 2);
        let heavy = queued(q.arrive(&"b", 3));
        let light = queued(q.arrive(&"c", 1));
        assert_eq!(
            q.cancel(&"b", heavy),
            Cancelled::Removed(vec![("c", light)])
        );
    }
}
