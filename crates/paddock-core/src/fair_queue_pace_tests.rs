//! The lone-tenant rule and pacing (session 10): the time is passed in.

use super::*;

const MS: Duration = Duration::from_millis(1);
const LEASE: Duration = Duration::from_secs(1);

fn t(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn admitted(a: (Arrival, Vec<(&'static str, Ticket)>)) -> Ticket {
    match a.0 {
        Arrival::Admitted(t) => t,
        Arrival::Queued(_) => panic!("waits, expected to be admitted"),
    }
}

fn queued(a: (Arrival, Vec<(&'static str, Ticket)>)) -> Ticket {
    match a.0 {
        Arrival::Queued(t) => t,
        Arrival::Admitted(_) => panic!("admitted, expected to wait"),
    }
}

#[test]
fn a_lone_tenant_is_not_held_to_the_budget() {
    let mut q = FairQueue::new(4, LEASE).unbounded_when_alone();
    let a: Vec<Ticket> = (0..6).map(|_| admitted(q.arrive(&"a", 1, t(0)))).collect();
    assert_eq!(q.load(), (6, 0), "alone, past the budget of 4");
    // Another tenant arrives: the budget applies again, to both.
    let b = queued(q.arrive(&"b", 1, t(1)));
    let a7 = queued(q.arrive(&"a", 1, t(1)));
    assert_eq!(q.release(a[0], MS, t(2)), vec![]);
    assert_eq!(q.release(a[1], MS, t(2)), vec![]);
    // Below the budget: "b", which has used nothing, goes first.
    assert_eq!(q.release(a[2], MS, t(3)), vec![("b", b)]);
    assert_eq!(q.release(a[3], MS, t(4)), vec![("a", a7)]);
}

#[test]
fn the_budget_applies_until_the_other_tenant_is_idle_for_the_window() {
    let mut q = FairQueue::new(1, LEASE).unbounded_when_alone();
    let b = admitted(q.arrive(&"b", 1, t(0)));
    assert_eq!(q.release(b, MS, t(1)), vec![]);
    // "b" holds nothing, but made a request less than ACTIVE_WINDOW ago.
    let a1 = admitted(q.arrive(&"a", 1, t(500)));
    let a2 = queued(q.arrive(&"a", 1, t(600)));
    // Past the window "a" is alone: the next arrival admits both waiting and new requests.
    let (arrival, others) = q.arrive(&"a", 1, t(1001));
    assert!(matches!(arrival, Arrival::Admitted(_)), "{arrival:?}");
    assert_eq!(others, vec![("a", a2)]);
    assert_eq!(q.load(), (3, 0));
    // Without the rule, a lone tenant is held to the budget (the queue of sessions 8-9).
    let mut capped = FairQueue::new(1, LEASE);
    admitted(capped.arrive(&"a", 1, t(0)));
    queued(capped.arrive(&"a", 1, t(5000)));
    assert_eq!(q.held_by(&"a"), 3);
    let _ = a1;
}

#[test]
fn while_a_light_tenant_is_active_a_heavy_one_is_paced() {
    // Pace: one seat. A request's first estimate holds its seat 5 ms.
    let mut q = FairQueue::new(16, LEASE).with_pace(100);
    // "a" alone floods: never paced (nobody light to yield to), its pace runs ahead.
    let a: Vec<Ticket> = (0..10).map(|_| admitted(q.arrive(&"a", 1, t(0)))).collect();
    assert_eq!(q.next_due(t(0)), None);
    // "b" arrives, light: admitted at once, and from now on "a" yields to it.
    let b = admitted(q.arrive(&"b", 1, t(1)));
    let a11 = queued(q.arrive(&"a", 1, t(1)));
    // "a" ran 50 ms ahead of its pace (10 × 5 ms): it may go again 20 ms (the slack) before.
    assert_eq!(q.next_due(t(1)), Some(t(30)));
    assert_eq!(q.poke(t(29)), vec![]);
    assert_eq!(q.poke(t(30)), vec![("a", a11)]);
    // Each admission moves "a" 5 ms further: the next one waits again.
    let a12 = queued(q.arrive(&"a", 1, t(30)));
    assert_eq!(q.next_due(t(30)), Some(t(35)));
    assert_eq!(q.poke(t(35)), vec![("a", a12)]);
    // The seats were never short: only the pace held "a" back.
    assert_eq!(q.load(), (13, 0));
    for x in a.into_iter().chain([b, a11, a12]) {
        q.release(x, MS, t(40));
    }
    assert_eq!(q.load(), (0, 0));
}

#[test]
fn a_light_tenant_may_burst_within_the_slack() {
    let mut q = FairQueue::new(16, LEASE).with_pace(100);
    for _ in 0..10 {
        admitted(q.arrive(&"a", 1, t(0)));
    }
    // "b" makes 5 requests at once: 5 × 5 ms brings it 25 ms ahead, the fifth starting
    // within the 20 ms slack; none waits although "a" is heavy.
    for _ in 0..5 {
        admitted(q.arrive(&"b", 1, t(0)));
    }
    // Now both are heavy: nobody light to yield to, so neither is paced.
    admitted(q.arrive(&"a", 1, t(0)));
    admitted(q.arrive(&"b", 1, t(0)));
}

#[test]
fn heavy_tenants_among_themselves_share_the_budget_unpaced() {
    let mut q = FairQueue::new(32, LEASE).with_pace(100);
    for _ in 0..10 {
        admitted(q.arrive(&"a", 1, t(0)));
        admitted(q.arrive(&"c", 1, t(0)));
    }
    // Both ran 50 ms ahead of the pace: neither is light, so neither yields.
    assert_eq!(
        q.next_due(t(1)),
        None,
        "no light tenant active: nobody is paced"
    );
    admitted(q.arrive(&"a", 1, t(1)));
    admitted(q.arrive(&"c", 1, t(1)));
    assert_eq!(q.load(), (22, 0));
}

#[test]
fn the_pace_is_settled_by_the_seat_time_really_used() {
    let mut q = FairQueue::new(16, LEASE).with_pace(100);
    // A 5-seat request, charged 5 × 5 ms (the first estimate) at admission.
    let a = admitted(q.arrive(&"a", 5, t(0)));
    // "b" makes one quick request: light, and active for the window.
    let b = admitted(q.arrive(&"b", 1, t(0)));
    assert_eq!(q.release(b, MS, t(1)), vec![]);
    // "a"'s request held its 5 seats 40 ms: 200 seat-ms, 175 more than charged, which puts
    // "a" as far ahead as it may be (PACE_MEMORY past now).
    assert_eq!(q.release(a, MS, t(40)), vec![]);
    let next = queued(q.arrive(&"a", 1, t(40)));
    assert_eq!(q.next_due(t(40)), Some(t(120)));
    assert_eq!(q.poke(t(120)), vec![("a", next)]);
    // Its mean hold is now 40 ms: a 1-seat request moves it 40 ms on.
    let after = queued(q.arrive(&"a", 1, t(120)));
    assert_eq!(q.next_due(t(120)), Some(t(160)));
    assert_eq!(q.poke(t(159)), vec![]);
    assert_eq!(q.poke(t(160)), vec![("a", after)]);
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
