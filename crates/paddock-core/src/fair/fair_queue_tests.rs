use super::*;

pub(super) const MS: Duration = Duration::from_millis(1);
pub(super) const LEASE: Duration = Duration::from_secs(1);

pub(super) fn t(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

pub(super) fn admitted(a: (Arrival, Admitted<&'static str>)) -> Ticket {
    match a.0 {
        Arrival::Admitted(t) => t,
        Arrival::Queued(_) => panic!("waits, expected to be admitted"),
    }
}

pub(super) fn queued(a: (Arrival, Admitted<&'static str>)) -> Ticket {
    match a.0 {
        Arrival::Queued(t) => t,
        Arrival::Admitted(_) => panic!("admitted, expected to wait"),
    }
}

#[test]
fn a_lone_tenant_may_use_every_seat() {
    let mut q = FairQueue::new(4, LEASE);
    let held: Vec<Ticket> = (0..4).map(|_| admitted(q.arrive(&"a", 1, t(0)))).collect();
    assert_eq!(q.held_by(&"a"), 4);
    let fifth = queued(q.arrive(&"a", 1, t(0)));
    assert_eq!(q.load(), (4, 1));
    assert_eq!(q.release(held[0], MS, t(1)).to_vec(), vec![("a", fifth)]);
}

#[test]
fn a_quiet_tenant_goes_before_a_flood_whatever_the_arrival_order() {
    let mut q = FairQueue::new(4, LEASE);
    let noisy: Vec<Ticket> = (0..4)
        .map(|_| admitted(q.arrive(&"noisy", 1, t(0))))
        .collect();
    let flood: Vec<Ticket> = (0..30)
        .map(|_| queued(q.arrive(&"noisy", 1, t(0))))
        .collect();
    let quiet = queued(q.arrive(&"quiet", 1, t(0)));
    // The first seat to free goes to the quiet tenant: it has used nothing.
    assert_eq!(
        q.release(noisy[0], MS, t(1)).to_vec(),
        vec![("quiet", quiet)]
    );
    // The next to the noisy tenant's oldest waiting request.
    assert_eq!(
        q.release(quiet, MS, t(2)).to_vec(),
        vec![("noisy", flood[0])]
    );
}

#[test]
fn the_tenant_that_used_less_work_goes_next() {
    let mut q = FairQueue::new(1, LEASE);
    let first = admitted(q.arrive(&"lists", 1, t(0)));
    let lists = queued(q.arrive(&"lists", 1, t(0)));
    let gets: Vec<Ticket> = (0..5).map(|_| queued(q.arrive(&"gets", 1, t(0)))).collect();
    // "gets" started at the floor (0) and was charged nothing; "lists" now is charged 10 ms.
    assert_eq!(
        q.release(first, 10 * MS, t(10)).to_vec(),
        vec![("gets", gets[0])]
    );
    // Each GET costs 2 ms: "gets" goes on until its virtual time passes 10 ms (plus the
    // estimate of the request "lists" would have in progress).
    let mut now = 10;
    for i in 0..4 {
        now += 2;
        assert_eq!(
            q.release(gets[i], 2 * MS, t(now)).to_vec(),
            vec![("gets", gets[i + 1])],
            "GET {i}"
        );
    }
    now += 2;
    assert_eq!(
        q.release(gets[4], 2 * MS, t(now)).to_vec(),
        vec![("lists", lists)]
    );
}

#[test]
fn a_tenant_back_from_idle_starts_at_the_busy_tenants_floor() {
    let mut q = FairQueue::new(1, LEASE);
    // "a" works alone for a while: 100 requests of 1 ms.
    let mut now = 0;
    let mut r = admitted(q.arrive(&"a", 1, t(now)));
    for _ in 0..100 {
        now += 1;
        let next = queued(q.arrive(&"a", 1, t(now))); // "a" stays busy between requests
        assert_eq!(q.release(r, MS, t(now)).to_vec(), vec![("a", next)]);
        r = next;
    }
    // "b" arrives: it starts at a's virtual time, not at 0, so it does not get 100 ms of
    // exclusive service; both alternate.
    let a = queued(q.arrive(&"a", 1, t(now)));
    let b1 = queued(q.arrive(&"b", 1, t(now)));
    let b2 = queued(q.arrive(&"b", 1, t(now)));
    assert_eq!(q.release(r, MS, t(now + 1)).to_vec(), vec![("b", b1)]);
    let next = q.release(b1, MS, t(now + 2));
    assert_eq!(
        next.to_vec(),
        vec![("a", a)],
        "b did not bank a's 100 ms as credit"
    );
    assert_eq!(q.release(a, MS, t(now + 3)).to_vec(), vec![("b", b2)]);
}

#[test]
fn a_heavy_request_is_not_starved_by_light_ones() {
    let mut q = FairQueue::new(4, LEASE);
    let a: Vec<Ticket> = (0..3).map(|_| admitted(q.arrive(&"a", 1, t(0)))).collect();
    let heavy = queued(q.arrive(&"b", 3, t(0)));
    let light = queued(q.arrive(&"c", 1, t(0)));
    // "b" (oldest among tenants at the floor) does not fit yet, and "c" waits behind it
    // rather than overtaking into the free seat.
    assert_eq!(q.load(), (3, 2));
    assert_eq!(q.release(a[0], MS, t(1)).to_vec(), vec![]);
    assert_eq!(q.release(a[1], MS, t(1)).to_vec(), vec![("b", heavy)]);
    assert_eq!(q.release(a[2], MS, t(1)).to_vec(), vec![("c", light)]);
}

#[test]
fn weights_are_bounded_by_the_budget() {
    let mut q = FairQueue::new(4, LEASE);
    let big = admitted(q.arrive(&"a", 10, t(0)));
    assert_eq!(q.load(), (4, 0));
    let small = queued(q.arrive(&"b", 0, t(0)));
    assert_eq!(q.release(big, MS, t(1)).to_vec(), vec![("b", small)]);
    assert_eq!(q.load(), (1, 0));
}

#[test]
fn a_grant_past_its_lease_is_revoked_when_someone_waits() {
    let mut q = FairQueue::new(2, LEASE);
    // "slow" holds every seat with requests that stop working (a client that stops reading).
    let s1 = admitted(q.arrive(&"slow", 1, t(0)));
    let s2 = admitted(q.arrive(&"slow", 1, t(500)));
    // Within the lease "b" waits, and a poke changes nothing.
    let b = queued(q.arrive(&"b", 1, t(900)));
    assert_eq!(q.poke(t(999)).to_vec(), vec![]);
    // Past the first grant's lease, a poke revokes it (only it) and admits "b".
    assert_eq!(q.poke(t(1000)).to_vec(), vec![("b", b)]);
    assert_eq!((q.revoked(), q.held_by(&"slow"), q.load()), (1, 1, (2, 0)));
    // A new arrival past the second lease revokes that one at once.
    let c = admitted(q.arrive(&"c", 1, t(1500)));
    assert_eq!((q.revoked(), q.held_by(&"slow")), (2, 0));
    // The revoked requests end later: their work is charged, no seat is freed twice.
    assert_eq!(q.release(s1, 30 * MS, t(2000)).to_vec(), vec![]);
    assert_eq!(q.release(s2, 30 * MS, t(2000)).to_vec(), vec![]);
    assert_eq!(q.load(), (2, 0));
    assert_eq!(q.release(b, MS, t(2001)).to_vec(), vec![]);
    assert_eq!(q.release(c, MS, t(2001)).to_vec(), vec![]);
    assert_eq!(q.load(), (0, 0));
    assert!(q.flows.is_empty() && q.grants.is_empty());
}

#[test]
fn an_arrival_that_revokes_a_lease_may_admit_an_older_waiting_request() {
    let mut q = FairQueue::new(1, LEASE);
    let a = admitted(q.arrive(&"a", 1, t(0)));
    let b = queued(q.arrive(&"b", 1, t(10)));
    // Nobody poked; "c" arrives past the lease: the seat goes to "b", older at the same floor.
    let (arrival, others) = q.arrive(&"c", 1, t(1200));
    assert!(matches!(arrival, Arrival::Queued(_)));
    assert_eq!(others.to_vec(), vec![("b", b)]);
    assert_eq!(q.release(a, MS, t(1300)).to_vec(), vec![]);
}

#[test]
fn cancelling_tells_a_waiting_request_from_an_admitted_one() {
    let mut q = FairQueue::new(1, LEASE);
    let a = admitted(q.arrive(&"a", 1, t(0)));
    let b = queued(q.arrive(&"b", 1, t(0)));
    let c = queued(q.arrive(&"c", 1, t(0)));
    assert_eq!(q.cancel(&"b", b, t(1)), Cancelled::Removed(Admitted::new()));
    assert_eq!(q.release(a, MS, t(1)).to_vec(), vec![("c", c)]);
    // "c" was admitted: cancelling it now tells the caller to release it.
    assert_eq!(q.cancel(&"c", c, t(2)), Cancelled::WasAdmitted);
    assert_eq!(q.release(c, MS, t(2)).to_vec(), vec![]);
    // Released twice: nothing changes.
    assert_eq!(q.release(c, MS, t(2)).to_vec(), vec![]);
    assert_eq!(q.load(), (0, 0));
    assert!(q.flows.is_empty(), "idle tenants are forgotten");
}

#[test]
fn cancelling_a_blocking_head_admits_those_behind() {
    let mut q = FairQueue::new(4, LEASE);
    admitted(q.arrive(&"a", 2, t(0)));
    let heavy = queued(q.arrive(&"b", 3, t(0)));
    let light = queued(q.arrive(&"c", 1, t(0)));
    assert_eq!(
        q.cancel(&"b", heavy, t(1)),
        Cancelled::Removed(Admitted::from_vec(vec![("c", light)]))
    );
}

#[test]
fn a_busy_tenant_leaves_the_reserve_to_light_tenants() {
    let mut q = FairQueue::new(8, LEASE).with_reserve(2);
    let flood: Vec<Ticket> = (0..6).map(|_| admitted(q.arrive(&"a", 1, t(0)))).collect();
    // "a" holds more than the reserve: it may not take the last two seats.
    let waiting = queued(q.arrive(&"a", 1, t(0)));
    assert_eq!(q.load(), (6, 1));
    // Light tenants get them at once, flood or not.
    let b = admitted(q.arrive(&"b", 1, t(0)));
    let c = admitted(q.arrive(&"c", 1, t(0)));
    assert_eq!(q.load(), (8, 1));
    // The budget is full: "b"'s second request waits, first in line.
    let b2 = queued(q.arrive(&"b", 1, t(0)));
    // "b" is still light with two (the reserve's size): the seat "c" frees is its.
    assert_eq!(q.release(c, MS, t(1)).to_vec(), vec![("b", b2)]);
    // "a" may come back only below 6 seats in use: 7, then 6, then 5.
    assert_eq!(q.release(flood[0], MS, t(1)).to_vec(), vec![]);
    assert_eq!(q.release(b, MS, t(2)).to_vec(), vec![]);
    assert_eq!(q.release(b2, MS, t(3)).to_vec(), vec![("a", waiting)]);
}

#[test]
fn a_lone_tenants_first_request_may_use_the_whole_budget() {
    let mut q = FairQueue::new(8, LEASE).with_reserve(2);
    let heavy = admitted(q.arrive(&"a", 8, t(0)));
    let next = queued(q.arrive(&"a", 1, t(0)));
    assert_eq!(q.release(heavy, MS, t(1)).to_vec(), vec![("a", next)]);
    // A heavier request than the room of a busy tenant waits until the tenant holds
    // nothing, then runs: it is never starved for good.
    let heavy = queued(q.arrive(&"a", 7, t(1)));
    assert_eq!(q.release(next, MS, t(2)).to_vec(), vec![("a", heavy)]);
}

#[test]
fn the_reserve_leaves_busy_tenants_at_least_one_seat() {
    let mut q = FairQueue::new(2, LEASE).with_reserve(5);
    let first = admitted(q.arrive(&"a", 1, t(0)));
    // The reserve is clamped to 1 of 2: a busy tenant still has one seat, now held.
    let second = queued(q.arrive(&"a", 1, t(0)));
    assert_eq!(q.release(first, MS, t(1)).to_vec(), vec![("a", second)]);
}
