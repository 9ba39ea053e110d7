use serde_json::{Value, json};

use super::*;
use crate::observe::usage::UsageTally;

fn index(caches: &UsageCaches, path_end: &str) -> usize {
    caches
        .collections()
        .iter()
        .position(|c| c.path().ends_with(path_end))
        .unwrap_or_else(|| panic!("no collection {path_end}"))
}

fn namespace(name: &str, tenant: &str) -> Value {
    json!({"metadata": {"name": name, "resourceVersion": "1", "uid": "u",
        "labels": {TENANT_LABEL: tenant, "other": "x"}, "annotations": {"a": "b"}},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
}

fn pod(ns: &str, name: &str, phase: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": ns, "resourceVersion": "2",
            "managedFields": [{"manager": "kubectl"}], "labels": {"app": "a"}},
        "spec": {"nodeName": "n", "volumes": [{"name": "v", "emptyDir": {}}],
            "containers": [
                {"name": "a", "image": "i", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                    "limits": {"cpu": "1", "memory": "128Mi"}}},
                {"name": "b", "image": "i", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {"phase": phase, "podIP": "10.0.0.1"}})
}

fn claim(ns: &str, name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": ns, "resourceVersion": "3"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
}

fn configmap(ns: &str, name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": ns, "resourceVersion": "4"}, "data": {"k": "v"}})
}

fn crd(group: &str, tenant: &str) -> Value {
    json!({"metadata": {"name": format!("things.{group}"), "resourceVersion": "5",
        "labels": {TENANT_LABEL: tenant}}, "spec": {"group": group, "names": {"plural": "things"}}})
}

/// The figures from shaped caches equal those of the full objects folded directly.
#[test]
fn shaped_caches_tally_as_the_full_objects() {
    let namespaces = [
        namespace("foofoo-a", "foofoo"),
        namespace("barbar-b", "barbar"),
    ];
    let pods = [
        pod("foofoo-a", "p1", "Running"),
        pod("foofoo-a", "p2", "Pending"),
        pod("barbar-b", "p3", "Running"),
        pod("kube-system", "platform", "Running"),
    ];
    let claims = [claim("foofoo-a", "c1"), claim("default", "c2")];
    let configmaps = [
        configmap("foofoo-a", "x"),
        configmap("barbar-b", "y"),
        configmap("default", "z"),
    ];
    let crds = [
        crd("foofoo-example.com", "foofoo"),
        crd("barbar-x.io", "foofoo"),
    ];

    let mut direct = UsageTally::default();
    namespaces.iter().for_each(|n| direct.add_namespace(n));
    pods.iter().for_each(|p| direct.add_pod(p));
    claims.iter().for_each(|c| direct.add_pvc(c));
    configmaps
        .iter()
        .for_each(|c| direct.add_namespaced("configmaps", c));
    crds.iter()
        .for_each(|c| direct.add_cluster("customresourcedefinitions.apiextensions.k8s.io", c));

    let mut caches = UsageCaches::default();
    let shaped = |i: usize, objs: &[Value], c: &UsageCaches| -> Vec<Value> {
        let shape = c.collections()[i].watch().shape;
        objs.iter().cloned().filter_map(shape).collect()
    };
    for (end, objs) in [
        ("/namespaces", &namespaces[..]),
        ("/pods", &pods[..]),
        ("/persistentvolumeclaims", &claims[..]),
        ("/configmaps", &configmaps[..]),
        ("/customresourcedefinitions", &crds[..]),
    ] {
        let i = index(&caches, end);
        let items = shaped(i, objs, &caches);
        caches.listed(i, items);
    }
    assert!(!caches.synced(), "other collections not listed yet");
    for i in 0..caches.collections().len() {
        if !caches.caches[i].synced {
            caches.listed(i, Vec::new());
        }
    }
    assert!(caches.synced());
    let (tally, uncounted) = caches.tally();
    assert!(uncounted.is_empty());
    for t in ["foofoo", "barbar"] {
        assert_eq!(tally.figures(t), direct.figures(t), "tenant {t}");
    }
    let f = tally.figures("foofoo");
    assert_eq!(
        (f.pods, f.running_pods, f.cpu_requests_millicores),
        (2, 1, 350)
    );
    assert_eq!(f.storage_requests_bytes, 1 << 30);
    assert_eq!(
        f.objects["customresourcedefinitions.apiextensions.k8s.io"],
        1
    );
}

#[test]
fn only_tenant_objects_and_needed_fields_are_kept() {
    let caches = UsageCaches::default();
    let pods = caches.collections()[index(&caches, "/pods")].watch();
    assert!((pods.shape)(pod("kube-system", "x", "Running")).is_none());
    let kept = (pods.shape)(pod("foofoo-a", "x", "Running")).expect("tenant pod kept");
    assert!(kept["metadata"].get("managedFields").is_none());
    assert!(kept["spec"].get("volumes").is_none());
    assert_eq!(kept["metadata"]["resourceVersion"], "2");
    let cms = caches.collections()[index(&caches, "/configmaps")].watch();
    assert!(cms.metadata_only);
    let kept = (cms.shape)(configmap("foofoo-a", "x")).expect("kept");
    assert!(kept.get("data").is_none());
    let ns = caches.collections()[index(&caches, "/namespaces")].watch();
    assert_eq!(ns.selector, TENANT_LABEL);
    let kept = (ns.shape)(namespace("foofoo-a", "foofoo")).expect("kept");
    assert_eq!(kept["metadata"]["labels"], json!({TENANT_LABEL: "foofoo"}));
}

#[test]
fn refused_collections_are_named_and_events_move_the_figures() {
    let mut caches = UsageCaches::default();
    for i in 0..caches.collections().len() {
        caches.listed(i, Vec::new());
    }
    let ns = index(&caches, "/namespaces");
    caches.listed(ns, vec![namespace("foofoo-a", "foofoo")]);
    let cm = index(&caches, "/configmaps");
    caches.upsert(cm, configmap("foofoo-a", "x"));
    caches.upsert(cm, configmap("foofoo-a", "y"));
    assert_eq!(caches.tally().0.figures("foofoo").objects["configmaps"], 2);
    caches.remove(cm, &configmap("foofoo-a", "x"));
    assert_eq!(caches.tally().0.figures("foofoo").objects["configmaps"], 1);

    let pods = index(&caches, "/pods");
    caches.refused(pods, 403);
    caches.refused(cm, 404);
    let (tally, uncounted) = caches.tally();
    assert_eq!(uncounted, vec!["/api/v1/pods".to_string()]);
    assert_eq!(tally.figures("foofoo").objects["configmaps"], 0);
    caches.listed(pods, Vec::new());
    assert!(caches.tally().1.is_empty(), "a list clears the refusal");
}
