use super::*;
use serde_json::json;

fn obj(ns: &str, name: &str, rv: &str) -> Value {
    json!({"metadata": {"namespace": ns, "name": name, "resourceVersion": rv}})
}

#[test]
fn events_are_decoded() {
    let e = parse_event(
        br#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}"#,
    )
    .unwrap();
    assert_eq!(e.resource_version(), Some("5"));
    assert!(matches!(e, WatchEvent::Added(_)));
    let b = parse_event(
        br#"{"type":"BOOKMARK","object":{"kind":"Namespace","metadata":{"resourceVersion":"9"}}}"#,
    )
    .unwrap();
    assert_eq!(b, WatchEvent::Bookmark("9".into()));
    let g = parse_event(
        br#"{"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old resource version"}}"#,
    )
    .unwrap();
    assert_eq!(
        g,
        WatchEvent::Error {
            code: 410,
            message: "too old resource version".into()
        }
    );
    assert_eq!(g.resource_version(), None);
    assert!(parse_event(b"{\"type\":\"WHAT\"}").is_err());
    assert!(parse_event(b"not json").is_err());
}

#[test]
fn the_cache_follows_events() {
    let mut c = Cache::default();
    assert!(!c.synced);
    assert_eq!(
        c.apply(WatchEvent::Added(obj("a", "x", "1"))),
        Some(Change::Upserted(("a".into(), "x".into())))
    );
    c.apply(WatchEvent::Modified(obj("a", "x", "2")));
    assert_eq!(c.get("a", "x").unwrap()["metadata"]["resourceVersion"], "2");
    // A deletion hands back the last state the cache had.
    let gone = c.apply(WatchEvent::Deleted(obj("a", "x", "3"))).unwrap();
    assert_eq!(
        gone,
        Change::Removed(("a".into(), "x".into()), obj("a", "x", "2"))
    );
    assert!(c.is_empty());
    assert_eq!(c.apply(WatchEvent::Bookmark("4".into())), None);
}

#[test]
fn a_relist_reports_only_what_differs() {
    let mut c = Cache::default();
    let first = c.replace(vec![
        obj("a", "x", "1"),
        obj("a", "y", "1"),
        obj("b", "z", "1"),
    ]);
    assert_eq!(first.len(), 3);
    assert!(c.synced);
    let again = c.replace(vec![obj("a", "x", "1"), obj("a", "y", "2")]);
    assert_eq!(
        again,
        vec![
            Change::Upserted(("a".into(), "y".into())),
            Change::Removed(("b".into(), "z".into()), obj("b", "z", "1")),
        ]
    );
    let names: Vec<_> = c
        .in_namespace("a")
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["x", "y"]);
    assert_eq!(c.in_namespace("b").count(), 0);
    assert_eq!(c.len(), 2);
}

#[test]
fn only_gone_relists_at_once() {
    assert_eq!(after_error(410), AfterError::Relist);
    assert_eq!(after_error(500), AfterError::Retry);
    assert_eq!(after_error(0), AfterError::Retry);
}

#[test]
fn backoff_doubles_to_a_cap_with_jitter() {
    assert_eq!(backoff(0, 0.0), Duration::from_millis(250));
    assert_eq!(backoff(2, 0.0), Duration::from_secs(1));
    assert_eq!(backoff(40, 0.0), Duration::from_secs(30));
    assert_eq!(backoff(40, 1.0), Duration::from_secs(45));
    assert_eq!(backoff(0, 7.0), Duration::from_millis(375));
}

#[test]
fn the_work_queue_deduplicates_and_keeps_changes_made_during_work() {
    let mut q = WorkQueue::default();
    q.add("a");
    q.add("b");
    q.add("a");
    assert_eq!(q.len(), 2);
    assert_eq!(q.take(), Some("a"));
    // Changed while worked on: not handed out twice, queued again when done.
    q.add("a");
    assert_eq!(q.take(), Some("b"));
    assert_eq!(q.take(), None);
    assert_eq!(q.active(), 2);
    q.done(&"a");
    assert_eq!(q.take(), Some("a"));
    q.done(&"a");
    q.done(&"b");
    assert!(q.is_empty());
    assert_eq!(q.active(), 0);
}

#[test]
fn settle_waits_for_quiet_but_not_for_ever() {
    let ms = Duration::from_millis;
    let mut s = Settle::new(ms(1000), ms(5000));
    // A drift: one change, its turn a second later.
    s.changed("drift", ms(0));
    assert!(s.due(ms(999)).is_empty());
    assert_eq!(s.due(ms(1000)), vec!["drift"]);
    assert!(s.is_empty());
    // A creation: changes every 300 ms push the turn on...
    for t in (0..=1200).step_by(300) {
        s.changed("creation", ms(10_000 + t));
    }
    assert!(s.due(ms(12_100)).is_empty());
    assert_eq!(s.due(ms(12_200)), vec!["creation"]);
    // ...but a key that never goes quiet still gets its turn `longest` after its first change.
    for t in (0..=6000).step_by(100) {
        s.changed("busy", ms(20_000 + t));
        if t == 5000 {
            assert_eq!(s.due(ms(20_000 + t)), vec!["busy"]);
        }
    }
}
