use super::*;

const D: Duration = Duration::from_secs(15);
const DEADLINE: Duration = Duration::from_secs(10);

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn at(s: u64) -> Now<'static> {
    Now {
        mono: secs(s),
        stamp: "2030-01-01T00:00:00.000000Z",
    }
}

fn me() -> Elector {
    Elector::new("paddock-system", "paddock-leader", "me", D)
}

/// A Lease as the apiserver answers it.
fn lease(holder: &str, duration: u64, renew: &str, transitions: u64, rv: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "paddock-leader", "namespace": "paddock-system", "resourceVersion": rv},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                 "acquireTime": "2029-12-31T23:00:00.000000Z", "renewTime": renew,
                 "leaseTransitions": transitions},
    })
}

fn update(n: Next) -> Value {
    match n {
        Next::Update(v) => v,
        other => panic!("expected an update, got {other:?}"),
    }
}

#[test]
fn a_missing_lease_is_created_held() {
    let mut e = me();
    e.observe(None, secs(0));
    let Next::Create(l) = e.next(at(0)) else {
        panic!("expected a create")
    };
    assert_eq!(l["spec"]["holderIdentity"], "me");
    assert_eq!(l["spec"]["leaseDurationSeconds"], 15);
    assert_eq!(l["spec"]["leaseTransitions"], 0);
    assert_eq!(l["spec"]["acquireTime"], "2030-01-01T00:00:00.000000Z");
    assert_eq!(l["metadata"]["namespace"], "paddock-system");
    assert!(l["metadata"].get("resourceVersion").is_none());
}

#[test]
fn a_held_lease_is_respected_until_it_expires() {
    let mut e = me();
    e.observe(Some(&lease("other", 15, "t1", 3, "7")), secs(100));
    assert_eq!(e.next(at(100)), Next::Wait { until: secs(115) });
    assert_eq!(e.next(at(114)), Next::Wait { until: secs(115) });
    assert!(!e.leading(secs(101), DEADLINE));
    // Read again unchanged: the expiry still counts from the first sighting.
    e.observe(Some(&lease("other", 15, "t1", 3, "7")), secs(110));
    assert_eq!(e.expires(), Some(secs(115)));
}

#[test]
fn an_expired_lease_is_taken_and_the_transition_counted() {
    let mut e = me();
    e.observe(Some(&lease("other", 15, "t1", 3, "7")), secs(100));
    let l = update(e.next(at(115)));
    assert_eq!(l["spec"]["holderIdentity"], "me");
    assert_eq!(l["spec"]["leaseTransitions"], 4);
    assert_eq!(l["spec"]["acquireTime"], "2030-01-01T00:00:00.000000Z");
    assert_eq!(
        l["metadata"]["resourceVersion"], "7",
        "the write is refused if another wrote since the read"
    );
}

#[test]
fn a_renewal_seen_restarts_the_expiry() {
    let mut e = me();
    e.observe(Some(&lease("other", 15, "t1", 3, "7")), secs(100));
    e.observe(Some(&lease("other", 15, "t2", 3, "8")), secs(112));
    assert_eq!(e.next(at(120)), Next::Wait { until: secs(127) });
}

#[test]
fn clock_skew_the_holders_renew_time_is_not_read() {
    // The holder's wall clock is an hour behind: its renewTime looks long expired, yet it
    // renewed just now, so the lease is respected.
    let mut e = me();
    e.observe(
        Some(&lease("other", 15, "2000-01-01T00:00:00.000000Z", 1, "7")),
        secs(500),
    );
    assert_eq!(e.next(at(501)), Next::Wait { until: secs(515) });
    // And one an hour ahead that stopped writing expires all the same.
    let mut f = me();
    f.observe(
        Some(&lease("other", 15, "2099-01-01T00:00:00.000000Z", 1, "7")),
        secs(500),
    );
    assert!(matches!(f.next(at(515)), Next::Update(_)));
}

#[test]
fn the_holders_own_duration_is_the_one_waited() {
    let mut e = me();
    e.observe(Some(&lease("other", 60, "t1", 0, "7")), secs(0));
    assert_eq!(e.next(at(30)), Next::Wait { until: secs(60) });
}

#[test]
fn an_own_lease_is_renewed_keeping_acquire_time_and_transitions() {
    let mut e = me();
    e.observe(Some(&lease("me", 15, "t1", 5, "9")), secs(0));
    assert!(e.is_holder());
    // Read, not written (a restart with the same identity): not leading before a renewal.
    assert!(!e.leading(secs(0), DEADLINE));
    let l = update(e.next(at(4)));
    assert_eq!(l["spec"]["holderIdentity"], "me");
    assert_eq!(l["spec"]["leaseTransitions"], 5);
    assert_eq!(l["spec"]["acquireTime"], "2029-12-31T23:00:00.000000Z");
    assert_eq!(l["spec"]["renewTime"], "2030-01-01T00:00:00.000000Z");
    assert_eq!(l["metadata"]["resourceVersion"], "9");
}

#[test]
fn a_holder_leads_until_the_renew_deadline_after_its_last_write() {
    let mut e = me();
    e.wrote(&lease("me", 15, "t1", 0, "9"), secs(100));
    assert!(e.leading(secs(100), DEADLINE));
    assert!(e.leading(secs(109), DEADLINE));
    assert!(!e.leading(secs(110), DEADLINE));
    e.wrote(&lease("me", 15, "t2", 0, "10"), secs(105));
    assert!(e.leading(secs(110), DEADLINE));
    // Another took it (seen by a read): no longer leading at once.
    e.observe(Some(&lease("other", 15, "t3", 1, "11")), secs(111));
    assert!(!e.leading(secs(111), DEADLINE));
}

#[test]
fn a_released_lease_is_taken_at_once() {
    let mut holder = me();
    holder.wrote(&lease("me", 15, "t1", 2, "9"), secs(0));
    let released = holder.release("t2").unwrap();
    assert_eq!(released["spec"]["holderIdentity"], "");
    assert_eq!(released["spec"]["leaseDurationSeconds"], 1);
    assert_eq!(released["spec"]["leaseTransitions"], 2);
    assert_eq!(released["metadata"]["resourceVersion"], "9");

    let mut other = Elector::new("paddock-system", "paddock-leader", "other", D);
    let mut seen = released.clone();
    seen["metadata"]["resourceVersion"] = json!("10");
    other.observe(Some(&seen), secs(50));
    let l = update(other.next(at(50)));
    assert_eq!(l["spec"]["holderIdentity"], "other");
    assert_eq!(l["spec"]["leaseTransitions"], 3);
}

#[test]
fn only_the_holder_releases() {
    let mut e = me();
    e.observe(Some(&lease("other", 15, "t1", 0, "7")), secs(0));
    assert_eq!(e.release("t"), None);
    let mut none = me();
    none.observe(None, secs(0));
    assert_eq!(none.release("t"), None);
}

#[test]
fn a_lease_written_by_hand_without_times_is_read() {
    let mut e = me();
    let bare = json!({"metadata": {"resourceVersion": "3"}, "spec": {}});
    e.observe(Some(&bare), secs(0));
    // No holder: taken at once, counted as a transition.
    let l = update(e.next(at(0)));
    assert_eq!(l["spec"]["leaseTransitions"], 1);
    let r = LeaseRecord::of_lease(&l);
    assert_eq!(r.holder, "me");
    assert_eq!(LeaseRecord::of_lease(&json!({"spec": r.to_spec()})), r);
}
