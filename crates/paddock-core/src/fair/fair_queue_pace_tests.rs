//! The lone-tenant rule and pacing, with the time passed in.

use super::*;

// The time and arrival helpers are the queue tests' own.
use super::tests::{LEASE, MS, admitted, queued, t};

#[test]
fn a_lone_tenant_is_not_held_to_the_budget() {
    let mut q = FairQueue::new(4, LEASE).unbounded_when_alone();
    let a: Vec<Ticket> = (0..6).map(|_| admitted(q.arrive(&"a", 1, t(0)))).collect();
    assert_eq!(q.load(), (6, 0), "alone, past the budget of 4");
    // Another tenant arrives: the budget applies again, to both.
    let b = queued(q.arrive(&"b", 1, t(1)));
    let a7 = queued(q.arrive(&"a", 1, t(1)));
    assert_eq!(q.release(a[0], MS, t(2)).to_vec(), vec![]);
    assert_eq!(q.release(a[1], MS, t(2)).to_vec(), vec![]);
    // Below the budget: "b", which has used nothing, goes first.
    assert_eq!(q.release(a[2], MS, t(3)).to_vec(), vec![("b", b)]);
    assert_eq!(q.release(a[3], MS, t(4)).to_vec(), vec![("a", a7)]);
}

#[test]
fn the_budget_applies_until_the_other_tenant_is_idle_for_the_window() {
    let mut q = FairQueue::new(1, LEASE).unbounded_when_alone();
    let b = admitted(q.arrive(&"b", 1, t(0)));
    assert_eq!(q.release(b, MS, t(1)).to_vec(), vec![]);
    // "b" holds nothing, but made a request less than ACTIVE_WINDOW ago.
    let a1 = admitted(q.arrive(&"a", 1, t(500)));
    let a2 = queued(q.arrive(&"a", 1, t(600)));
    // Past the window "a" is alone: the next arrival admits both waiting and new requests.
    let (arrival, others) = q.arrive(&"a", 1, t(1001));
    assert!(matches!(arrival, Arrival::Admitted(_)), "{arrival:?}");
    assert_eq!(others.to_vec(), vec![("a", a2)]);
    assert_eq!(q.load(), (3, 0));
    // Without the rule, a lone tenant is held to the budget (the queue of sessions 8-9).
    let mut capped = FairQueue::new(1, LEASE);
    admitted(capped.arrive(&"a", 1, t(0)));
    queued(capped.arrive(&"a", 1, t(500)));
    assert_eq!(q.held_by(&"a"), 3);
    let _ = a1;
}

/// "a" alone runs 10 requests held 100 ms each from `at`: one seat-second, twice the half
/// of a pace of 100 % under which a tenant is light. Returns when they end.
fn make_heavy(q: &mut FairQueue<&'static str>, k: &'static str, at: u64) -> u64 {
    let held: Vec<Ticket> = (0..10).map(|_| admitted(q.arrive(&k, 1, t(at)))).collect();
    for x in held {
        q.release(x, MS, t(at + 100));
    }
    at + 100
}

#[test]
fn while_a_light_tenant_is_active_a_heavy_one_is_paced() {
    // Pace: one seat.
    let mut q = FairQueue::new(16, LEASE).with_pace(100);
    // "a" alone floods: never paced (nobody light to yield to); its schedule runs ahead, at
    // most PACE_MEMORY (100 ms) past now.
    let now = make_heavy(&mut q, "a", 0);
    assert_eq!(q.next_due(t(now)), None);
    // "b" arrives, light: admitted at once, and from now on "a" yields to it.
    let b = admitted(q.arrive(&"b", 1, t(now)));
    let a1 = queued(q.arrive(&"a", 1, t(now)));
    // "a" may go again 20 ms (PACE_SLACK) before its schedule: at 180 ms.
    assert_eq!(q.next_due(t(now)), Some(t(180)));
    assert_eq!(q.poke(t(179)).to_vec(), vec![]);
    assert_eq!(q.poke(t(180)).to_vec(), vec![("a", a1)]);
    // Each admission moves "a" on by its mean hold (100 ms) × seats: the next one waits.
    let a2 = queued(q.arrive(&"a", 1, t(180)));
    assert_eq!(q.next_due(t(180)), Some(t(260)));
    assert_eq!(q.poke(t(260)).to_vec(), vec![("a", a2)]);
    // The seats were never short: only the pace held "a" back.
    assert_eq!(q.load(), (3, 0));
    for x in [b, a1, a2] {
        q.release(x, MS, t(270));
    }
    assert_eq!(q.load(), (0, 0));
}

#[test]
fn a_light_tenant_is_never_held_back() {
    let mut q = FairQueue::new(32, LEASE).with_pace(100);
    let now = make_heavy(&mut q, "a", 0);
    // "b" makes 10 requests at once: none waits although "a" is heavy and paced.
    let b: Vec<Ticket> = (0..10)
        .map(|_| admitted(q.arrive(&"b", 1, t(now))))
        .collect();
    queued(q.arrive(&"a", 1, t(now)));
    // Held 100 ms each, they make "b" heavy too: nobody light to yield to, so neither is
    // paced.
    for x in b {
        q.release(x, MS, t(now + 100));
    }
    admitted(q.arrive(&"b", 1, t(now + 100)));
    assert_eq!(q.load(), (2, 0), "a's waiting request went too");
}

#[test]
fn heavy_tenants_among_themselves_share_the_budget_unpaced() {
    let mut q = FairQueue::new(32, LEASE).with_pace(100);
    make_heavy(&mut q, "a", 0);
    let now = make_heavy(&mut q, "c", 0);
    assert_eq!(
        q.next_due(t(now)),
        None,
        "no light tenant active: nobody is paced"
    );
    for _ in 0..2 {
        admitted(q.arrive(&"a", 1, t(now)));
        admitted(q.arrive(&"c", 1, t(now)));
    }
    assert_eq!(q.load(), (4, 0));
}

#[test]
fn the_pace_is_settled_by_the_seat_time_really_used() {
    let mut q = FairQueue::new(16, LEASE).with_pace(100);
    // A 5-seat request, charged 5 × 5 ms (the first estimate) at admission.
    let a = admitted(q.arrive(&"a", 5, t(0)));
    // "b" makes one quick request: light, and active for the window.
    let b = admitted(q.arrive(&"b", 1, t(0)));
    assert_eq!(q.release(b, MS, t(1)).to_vec(), vec![]);
    // "a"'s request held its 5 seats 200 ms: a seat-second (heavy), far more than charged,
    // which puts its schedule as far ahead as it may be (PACE_MEMORY past now).
    assert_eq!(q.release(a, MS, t(200)).to_vec(), vec![]);
    let next = queued(q.arrive(&"a", 1, t(200)));
    assert_eq!(q.next_due(t(200)), Some(t(280)));
    assert_eq!(q.poke(t(280)).to_vec(), vec![("a", next)]);
    // Its mean hold is now 200 ms: a 1-seat request moves it on by that, up to the cap.
    let after = queued(q.arrive(&"a", 1, t(280)));
    assert_eq!(q.next_due(t(280)), Some(t(360)));
    assert_eq!(q.poke(t(359)).to_vec(), vec![]);
    assert_eq!(q.poke(t(360)).to_vec(), vec![("a", after)]);
}

#[test]
fn pacing_off_changes_nothing() {
    let mut q = FairQueue::new(16, LEASE);
    for _ in 0..10 {
        admitted(q.arrive(&"a", 1, t(0)));
    }
    admitted(q.arrive(&"b", 1, t(1)));
    admitted(q.arrive(&"a", 1, t(1)));
    assert_eq!(q.next_due(t(1)), None);
}

#[test]
fn forgotten_tenants_leave_the_recent_map() {
    let mut q = FairQueue::new(4, LEASE)
        .unbounded_when_alone()
        .with_pace(100);
    for (i, k) in ["a", "b", "c"].iter().enumerate() {
        let x = admitted(q.arrive(k, 1, t(i as u64)));
        q.release(x, MS, t(i as u64 + 1));
    }
    assert_eq!(q.recent.len(), 3);
    let x = admitted(q.arrive(&"d", 1, t(5000)));
    assert_eq!(
        q.recent.len(),
        1,
        "only the tenant seen within the window stays"
    );
    q.release(x, MS, t(5001));
}

#[test]
fn a_heavy_tenant_is_paced_only_while_a_light_one_is_active() {
    let mut q = FairQueue::new(16, LEASE).with_pace(100);
    // Unknown to the queue: not paced.
    assert!(!q.is_paced(&"a", t(0)));
    // "a" alone, heavy: nobody light to yield to.
    let now = make_heavy(&mut q, "a", 0);
    assert!(!q.is_paced(&"a", t(now)));
    // "b" arrives, light: "a" is paced, "b" is not.
    let b = admitted(q.arrive(&"b", 1, t(now)));
    assert!(q.is_paced(&"a", t(now)));
    assert!(!q.is_paced(&"b", t(now)));
    q.release(b, MS, t(now + 3));
    // "b" idle past ACTIVE_WINDOW: "a" is alone again.
    assert!(q.is_paced(&"a", t(now + 500)));
    assert!(!q.is_paced(&"a", t(now + 1_100)));
    // With pacing off, nobody is light or heavy: nobody is paced.
    let mut off = FairQueue::new(16, LEASE);
    let now = make_heavy(&mut off, "a", 0);
    admitted(off.arrive(&"b", 1, t(now)));
    assert!(!off.is_paced(&"a", t(now)));
}

#[test]
fn a_light_tenant_slowed_by_a_flood_stays_light_beside_it() {
    // Pace 25: the line is at 0.125 of a seat.
    let mut q = FairQueue::new(64, LEASE).with_pace(25);
    // "b" makes one GET every 50 ms, each held 36 ms (the flood slows the upstream down):
    // 0.7 of a seat, over the pace's line.
    let mut at = 0;
    while at < 2_000 {
        let x = admitted(q.arrive(&"b", 1, t(at)));
        q.release(x, MS, t(at + 36));
        at += 50;
    }
    // Alone it is heavy by the line, and nobody is paced (nobody light).
    assert!(!q.is_paced(&"b", t(at)));
    // "a" floods: 40 seats held 100 ms, 4 seat-seconds: "b" uses under a quarter of it,
    // so "b" is light beside "a" and "a" is paced (yields; its next request waits).
    let held: Vec<Ticket> = (0..40)
        .map(|_| admitted(q.arrive(&"a", 1, t(at))))
        .collect();
    for x in held {
        q.release(x, MS, t(at + 100));
    }
    at += 100;
    let b = admitted(q.arrive(&"b", 1, t(at)));
    assert!(
        q.is_paced(&"a", t(at)),
        "the flood is not paced beside the slowed light tenant"
    );
    assert!(!q.is_paced(&"b", t(at)));
    queued(q.arrive(&"a", 1, t(at)));
    // Two equally busy tenants are both heavy: neither is paced for the other.
    let mut even = FairQueue::new(64, LEASE).with_pace(25);
    for k in ["a", "b"] {
        let held: Vec<Ticket> = (0..10)
            .map(|_| admitted(even.arrive(&k, 1, t(0))))
            .collect();
        for x in held {
            even.release(x, MS, t(100));
        }
    }
    assert!(!even.is_paced(&"a", t(100)) && !even.is_paced(&"b", t(100)));
    let _ = b;
}
