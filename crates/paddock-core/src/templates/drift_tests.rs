use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::templates::tests::cm;
use crate::templates::{NamespaceTemplate, TEMPLATES_ANNOTATION};

fn tmpl(name: &str, mandatory: bool, manifests: Vec<Value>) -> NamespaceTemplate {
    NamespaceTemplate {
        generation: 2,
        ..crate::templates::tests::tmpl(name, mandatory, manifests)
    }
}

/// A ConfigMap as the apiserver holds it after paddock's apply at `time`.
fn live(name: &str, template: &str, time: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "foofoo-web", "resourceVersion": "7", "uid": "u",
            "labels": {TEMPLATE_LABEL: template, LOCKED_LABEL: "true"},
            "managedFields": [{"manager": "paddock", "operation": "Apply", "time": time}]},
        "data": {"a": "b"}})
}

fn ns(annotation: &str) -> Value {
    json!({"metadata": {"name": "foofoo-web", "annotations": {TEMPLATES_ANNOTATION: annotation}}})
}

fn cm_kind() -> &'static TemplateKind {
    template_kind(&cm("x")).unwrap()
}

#[test]
fn fingerprints_ignore_status_volatile_metadata_and_key_order() {
    let a = live("x", "t", "2026-01-01T00:00:00Z");
    let mut b = json!({"data": {"a": "b"}, "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"namespace": "foofoo-web", "name": "x",
            "labels": {LOCKED_LABEL: "true", TEMPLATE_LABEL: "t"}}});
    b["status"] = json!({"used": 3});
    b["metadata"]["resourceVersion"] = json!("99");
    assert_eq!(fingerprint(&a), fingerprint(&b));
    let mut edited = a.clone();
    edited["data"]["a"] = json!("c");
    assert_ne!(fingerprint(&a), fingerprint(&edited));
    let mut relabelled = a.clone();
    relabelled["metadata"]["labels"]["extra"] = json!("1");
    assert_ne!(fingerprint(&a), fingerprint(&relabelled));
}

#[test]
fn a_listed_object_fingerprints_as_its_watch_event_and_apply_answer() {
    // A LIST's items carry no kind or apiVersion; the same object from a watch event or an
    // apply's answer does. Told apart, every listed object read as drift against paddock's
    // own apply, and was stamped again at each judgement.
    let applied = live("x", "t", "2026-01-01T00:00:00Z");
    assert_eq!(applied["kind"], "ConfigMap");
    let mut listed = applied.clone();
    let m = listed.as_object_mut().unwrap();
    m.remove("kind");
    m.remove("apiVersion");
    assert_eq!(fingerprint(&listed), fingerprint(&applied));
    assert!(!drifted(&listed, Some(fingerprint(&applied))));
    // Content still counts.
    listed["data"]["a"] = json!("c");
    assert!(drifted(&listed, Some(fingerprint(&applied))));
}

#[test]
fn paddocks_own_write_is_not_drift_another_managers_is() {
    let mine = live("x", "t", "2026-01-01T00:00:05Z");
    assert!(!drifted(&mine, None), "only paddock wrote it");
    assert!(!drifted(&mine, Some(fingerprint(&mine))));
    let mut status = mine.clone();
    status["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"manager": "kube-controller-manager", "operation": "Update",
            "subresource": "status", "time": "2026-01-01T00:00:09Z"}),
        );
    assert!(!drifted(&status, None), "a status write is not drift");
    let mut edit = mine.clone();
    edit["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .push(json!({"manager": "kubectl-edit", "operation": "Update", "time": "2026-01-01T00:00:05Z"}));
    assert!(drifted(&edit, None), "an edit in the same second counts");
    let mut older = mine.clone();
    older["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .push(json!({"manager": "kubectl-edit", "operation": "Update", "time": "2026-01-01T00:00:01Z"}));
    assert!(
        !drifted(&older, None),
        "paddock's apply came after the edit"
    );
    let mut unmanaged = mine.clone();
    unmanaged["metadata"]["managedFields"] = json!([]);
    assert!(drifted(&unmanaged, None), "paddock never applied it");
    // With a fingerprint, the content decides.
    let mut changed = mine.clone();
    changed["data"]["a"] = json!("c");
    assert!(drifted(&changed, Some(fingerprint(&mine))));
}

#[test]
fn only_kinds_of_mandatory_templates_are_watched() {
    let np = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "n"}});
    let ts = [
        tmpl("a", true, vec![cm("x"), np]),
        tmpl(
            "b",
            false,
            vec![json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}})],
        ),
    ];
    let kinds: Vec<&str> = watched_kinds(&ts).iter().map(|k| k.resource).collect();
    assert_eq!(kinds, ["configmaps", "networkpolicies"]);
}

#[test]
fn the_verdict_comes_from_the_caches() {
    let t = tmpl("t", true, vec![cm("x"), cm("y")]);
    let wanted = [&t];
    let synced: BTreeSet<&str> = ["configmaps"].into();
    let (x, y) = (
        live("x", "t", "2026-01-01T00:00:00Z"),
        live("y", "t", "2026-01-01T00:00:00Z"),
    );
    let both = [x, y.clone()];
    let observed: Vec<Observed<'_>> = both
        .iter()
        .map(|o| Observed {
            kind: cm_kind(),
            object: o,
            recorded: Some(fingerprint(o)),
        })
        .collect();
    let in_step = ns("t=2/in-sync");
    assert_eq!(
        verdict(&in_step, &wanted, &observed, &synced),
        Verdict::InStep
    );
    // Out of step by the annotation (a template change, a failure).
    assert!(matches!(
        verdict(&ns("t=1/in-sync"), &wanted, &observed, &synced),
        Verdict::Stamp { .. }
    ));
    assert!(matches!(
        verdict(&ns("t=2/failed"), &wanted, &observed, &synced),
        Verdict::Stamp { .. }
    ));
    // One deleted: stamp, but only once its kind's cache was listed.
    let one = &observed[..1];
    assert!(matches!(
        verdict(&in_step, &wanted, one, &synced),
        Verdict::Stamp { .. }
    ));
    assert_eq!(
        verdict(&in_step, &wanted, one, &BTreeSet::new()),
        Verdict::InStep
    );
    // One edited.
    let mut edited = y.clone();
    edited["data"]["a"] = json!("z");
    let drifted_obs = vec![
        observed[0],
        Observed {
            kind: cm_kind(),
            object: &edited,
            recorded: observed[1].recorded,
        },
    ];
    assert!(matches!(
        verdict(&in_step, &wanted, &drifted_obs, &synced),
        Verdict::Stamp { .. }
    ));
    // One stale: its template no longer wants it; it is pruned.
    let stale = live("old", "gone", "2026-01-01T00:00:00Z");
    let mut with_stale = observed.clone();
    with_stale.push(Observed {
        kind: cm_kind(),
        object: &stale,
        recorded: None,
    });
    match verdict(&in_step, &wanted, &with_stale, &synced) {
        Verdict::Stamp { prune } => {
            assert_eq!(prune.len(), 1);
            assert_eq!(prune[0].name, "old");
        }
        v => panic!("{v:?}"),
    }
}

#[test]
fn a_namespace_is_annotated_once_stamped_even_with_no_template() {
    assert!(!annotated(&json!({"metadata": {"name": "foofoo-web"}})));
    assert!(!annotated(
        &json!({"metadata": {"annotations": {"other": "x"}}})
    ));
    assert!(annotated(&ns("paddock-default=1:in-sync")));
    // Present, whatever its value.
    assert!(annotated(&ns("")));
}
