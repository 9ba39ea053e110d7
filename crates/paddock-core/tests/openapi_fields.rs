//! Walks the upstream OpenAPI (v2, captured from the test bed's kube-apiserver 1.33 by
//! tests/fixtures/capture.sh) of every built-in kind a tenant owns, and fails on any field that
//! looks like it names something (`namespace`, `*Ref`, `*Selector`, `subjects`, `*Name`, ...)
//! that the rule table neither handles nor excludes below with a reason.
//!
//! The tenant-owned kinds come from the catalog built from real discovery, not from the table.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use paddock_core::rules::schema::FieldRule;
use paddock_core::rules::schema::Holds;
use paddock_core::rules::schema::Step;
use paddock_core::rules::table::KINDS;
use paddock_core::{Catalog, Policy, TenantId};
use serde_json::Value;

/// Field names (or `parent.name` path ends) excluded wherever they appear, with the reason
/// they name nothing outside the tenant.
const EXCLUDED_NAMES: &[(&str, &str)] = &[
    // Same-namespace references: the apiserver and controllers resolve them in the object's
    // own namespace, which is the tenant's.
    ("secretName", "a Secret in the object's namespace"),
    ("secretRef", "a Secret in the object's namespace"),
    ("secretKeyRef", "a Secret key in the pod's namespace"),
    ("configMapRef", "a ConfigMap in the pod's namespace"),
    ("configMapKeyRef", "a ConfigMap key in the pod's namespace"),
    ("claimName", "a claim in the pod's namespace"),
    (
        "resourceClaimName",
        "a ResourceClaim in the pod's namespace",
    ),
    (
        "resourceClaimTemplateName",
        "a ResourceClaimTemplate in the pod's namespace",
    ),
    (
        "serviceAccountName",
        "a ServiceAccount in the pod's namespace",
    ),
    (
        "serviceName",
        "a Service in the object's namespace (StatefulSet governing service, Ingress backend)",
    ),
    ("nodePublishSecretRef", "a Secret in the pod's namespace"),
    ("scaleTargetRef", "a workload in the HPA's namespace"),
    ("datasetName", "a Flocker dataset, not an API object"),
    ("resourceName", "a compute resource (cpu, memory)"),
    ("targetContainerName", "a container of the pod itself"),
    (
        "boundObjectRef",
        "TokenRequest: a pod or secret of the request's namespace, or a node",
    ),
    // Not names of API objects.
    ("shareProcessNamespace", "a boolean"),
    ("manualSelector", "a boolean"),
    ("gmsaCredentialSpecName", "a Windows GMSA credential spec"),
    ("runAsUserName", "a Windows user name"),
    ("diskName", "an Azure disk"),
    ("shareName", "an Azure file share"),
    ("pdName", "a GCE persistent disk"),
    ("initiatorName", "an iSCSI initiator"),
    ("scaleIO.volumeName", "a ScaleIO volume, not an API object"),
    (
        "storageos.volumeName",
        "a StorageOS volume, not an API object",
    ),
    (
        "volumeNamespace",
        "StorageOS's own namespace, not the cluster's",
    ),
    (
        "scopeSelector",
        "quota scopes (BestEffort, PriorityClass), not objects",
    ),
    ("scopeName", "a quota scope"),
    (
        "externalName",
        "a DNS name (docs: Service externalName is not translated)",
    ),
    (
        "signerName",
        "a projected ClusterTrustBundle: public CA bundles the platform publishes per signer",
    ),
    ("nominatedNodeName", "status: a node, the platform's"),
    (
        "targetVolumeAttributesClassName",
        "status: a platform class",
    ),
    ("targetPortName", "a port name"),
    // Things of the pod itself.
    ("fieldRef", "a field of the pod itself (downward API)"),
    ("resourceFieldRef", "a resource of the pod's own container"),
    ("containerName", "a container of the pod itself"),
    ("hostname", "the pod's own host name"),
    // Pod selectors: select pods, which are only ever in the object's own namespace.
    (
        "selector",
        "selects pods or objects in the object's own namespace",
    ),
    ("podSelector", "selects pods in the policy's namespace"),
    (
        "labelSelector",
        "selects pods in the namespaces the term's namespaces/namespaceSelector name",
    ),
    (
        "objectSelector",
        "selects the objects a webhook sees, inside the namespaces its confined namespaceSelector allows",
    ),
    // Shared platform objects (SharedReadOnly or shared by design).
    ("nodeName", "nodes are the platform's, shared"),
    ("nodeSelector", "selects nodes, the platform's"),
    (
        "storageClassName",
        "classes are platform-shared (docs: Other decisions)",
    ),
    ("ingressClassName", "classes are platform-shared"),
    ("priorityClassName", "classes are platform-shared"),
    ("runtimeClassName", "classes are platform-shared"),
    ("volumeAttributesClassName", "classes are platform-shared"),
    (
        "currentVolumeAttributesClassName",
        "status: a platform class",
    ),
    ("deviceClassName", "device classes are platform-shared"),
    ("schedulerName", "a scheduler, the platform's"),
    ("driverName", "a CSI driver, the platform's"),
    (
        "storagePolicyName",
        "a vSphere storage policy, not an API object",
    ),
    ("nodeAffinity", "selects nodes"),
];

/// Paths excluded for one kind, with the reason.
const EXCLUDED_PATHS: &[(&str, &str, &str)] = &[
    (
        "SelfSubjectAccessReview",
        "spec.resourceAttributes.fieldSelector",
        "the answer is for the tenant's own identity; a selector cannot widen what it may do",
    ),
    (
        "SelfSubjectAccessReview",
        "spec.resourceAttributes.labelSelector",
        "as fieldSelector",
    ),
    (
        "SubjectAccessReview",
        "spec.resourceAttributes.fieldSelector",
        "a question, not a grant; the namespace it asks about is translated",
    ),
    (
        "SubjectAccessReview",
        "spec.resourceAttributes.labelSelector",
        "as fieldSelector",
    ),
    (
        "LocalSubjectAccessReview",
        "spec.resourceAttributes.fieldSelector",
        "as for SubjectAccessReview",
    ),
    (
        "LocalSubjectAccessReview",
        "spec.resourceAttributes.labelSelector",
        "as fieldSelector",
    ),
    (
        "Ingress",
        "spec.defaultBackend.resource",
        "a TypedLocalObjectReference: same namespace",
    ),
    (
        "Ingress",
        "spec.rules[].http.paths[].backend.resource",
        "a TypedLocalObjectReference: same namespace",
    ),
    (
        "PersistentVolumeClaim",
        "spec.dataSource",
        "a TypedLocalObjectReference: same namespace (dataSourceRef.namespace is translated)",
    ),
    (
        "Binding",
        "target",
        "a node, the platform's (the pods/binding subresource)",
    ),
];

fn json(path: &str) -> Value {
    let p = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

fn looks_like_a_reference(name: &str) -> bool {
    name == "namespace"
        || name == "namespaces"
        || name.ends_with("Namespace")
        || name.ends_with("Namespaces")
        || name == "subjects"
        || name == "serviceName"
        || name.ends_with("Ref")
        || name.ends_with("Refs")
        || name.ends_with("Selector")
        || name.ends_with("Selectors")
        || name.ends_with("ClassName")
        || (name.ends_with("Name") && name != "name")
}

/// JSON paths the table handles for a kind (`[]` after list steps), embedded structures
/// expanded.
fn handled(fields: &[FieldRule], prefix: &str, out: &mut Vec<String>) {
    for r in fields {
        let mut p = prefix.to_owned();
        for s in r.path {
            let Step { json, repeated, .. } = s;
            if !p.is_empty() {
                p.push('.');
            }
            p.push_str(json);
            if *repeated {
                p.push_str("[]");
            }
        }
        match r.holds {
            Holds::Embed(s) => handled(s.fields, &p, out),
            _ => out.push(p.strip_suffix("[]").unwrap_or(&p).to_owned()),
        }
    }
}

struct Walk<'a> {
    defs: &'a serde_json::Map<String, Value>,
    handled: Vec<String>,
    kind: String,
    found: Vec<String>,
}

impl Walk<'_> {
    fn is_handled(&self, path: &str) -> bool {
        self.handled.iter().any(|h| {
            path == h
                || path
                    .strip_prefix(h.as_str())
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]"))
        })
    }

    fn schema(&self, s: &Value) -> Option<(String, Value)> {
        let r = s.get("$ref").or_else(|| {
            s.get("allOf")
                .and_then(|a| a.get(0))
                .and_then(|x| x.get("$ref"))
        })?;
        let name = r.as_str()?.strip_prefix("#/definitions/")?;
        Some((name.to_owned(), self.defs.get(name)?.clone()))
    }

    fn walk(&mut self, schema: &Value, path: &str, seen: &mut BTreeSet<String>) {
        let (schema, def) = match self.schema(schema) {
            Some((name, s)) => {
                if !seen.insert(name.clone()) {
                    return;
                }
                (s, Some(name))
            }
            None => (schema.clone(), None),
        };
        if let Some(items) = schema.get("items") {
            self.walk(items, &format!("{path}[]"), seen);
        }
        if let Some(Value::Object(props)) = schema.get("properties") {
            for (name, sub) in props {
                let p = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                if self.is_handled(&p) {
                    continue;
                }
                // Top-level metadata: the universal ObjectMeta rules. A template's metadata
                // is the object's own (controllers create from it in the owner's namespace).
                if name == "metadata" {
                    continue;
                }
                // A container of handled fields (PV `spec.claimRef`, whose namespace is).
                let parent = self
                    .handled
                    .iter()
                    .any(|h| h.starts_with(&format!("{p}.")) || h.starts_with(&format!("{p}[].")));
                if looks_like_a_reference(name)
                    && !parent
                    && !EXCLUDED_NAMES
                        .iter()
                        .any(|(n, _)| n == name || p.ends_with(&format!(".{n}")))
                    && !EXCLUDED_PATHS
                        .iter()
                        .any(|(k, ep, _)| *k == self.kind && *ep == p)
                {
                    self.found.push(format!("{} {p}", self.kind));
                }
                if EXCLUDED_PATHS
                    .iter()
                    .any(|(k, ep, _)| *k == self.kind && *ep == p)
                {
                    continue;
                }
                self.walk(sub, &p, seen);
            }
        }
        if let Some(d) = def {
            seen.remove(&d);
        }
    }
}

#[test]
fn every_reference_like_field_is_handled_or_excluded() {
    let spec = json("tests/fixtures/openapi_v2.json");
    let defs = spec["definitions"].as_object().unwrap();
    let catalog = Catalog::from_aggregated(
        &std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/discovery-core.json"
        ))
        .unwrap(),
        &std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/discovery-apis.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let t = TenantId::parse("foofoo").unwrap();
    let mut found = Vec::new();
    let mut kinds = 0;
    for (name, def) in defs {
        if !name.starts_with("io.k8s.") || name.starts_with("io.k8s.apimachinery.") {
            continue;
        }
        let Some(gvk) = def["x-kubernetes-group-version-kind"].get(0) else {
            continue;
        };
        let (g, v, k) = (
            gvk["group"].as_str().unwrap_or(""),
            gvk["version"].as_str().unwrap_or(""),
            gvk["kind"].as_str().unwrap_or(""),
        );
        if k.ends_with("List") {
            continue;
        }
        let av = if g.is_empty() {
            v.to_owned()
        } else {
            format!("{g}/{v}")
        };
        // Shared read-only and forbidden kinds are never written by a tenant, and are shown as
        // they are or not at all.
        match catalog.resolve_kind(&t, &av, k).map(|i| i.policy) {
            Some(Policy::TenantOwned) => {}
            _ if KINDS
                .iter()
                .any(|r| r.group == g && r.kind == k && r.body_of.is_some()) => {}
            _ => continue,
        }
        kinds += 1;
        let mut handled_paths = Vec::new();
        if let Some(row) = KINDS.iter().find(|r| r.group == g && r.kind == k) {
            handled(row.fields, "", &mut handled_paths);
        }
        let mut w = Walk {
            defs,
            handled: handled_paths,
            kind: k.to_owned(),
            found: Vec::new(),
        };
        w.walk(def, "", &mut BTreeSet::new());
        found.extend(w.found);
    }
    assert!(kinds > 40, "only {kinds} tenant-owned kinds walked");
    found.sort();
    found.dedup();
    assert!(
        found.is_empty(),
        "fields that may name something outside the tenant, neither in the rule table \
         (crates/paddock-core/src/rules/table.rs) nor excluded with a reason in this test:\n{}",
        found.join("\n")
    );
}

/// The walk itself finds what it should: a field the table handles is not reported, and one
/// it does not (a made-up kind's `spec.namespace`, `spec.targetNamespace`) is, an excluded
/// name is not.
#[test]
fn the_walk_reports_unhandled_fields() {
    let defs: serde_json::Map<String, Value> = serde_json::from_value(serde_json::json!({
        "X": {"properties": {"spec": {"$ref": "#/definitions/S"}}},
        "S": {"properties": {
            "targetNamespace": {"type": "string"},
            "namespace": {"type": "string"},
            "peerRef": {"$ref": "#/definitions/S"},
            "secretName": {"type": "string"}
        }}
    }))
    .unwrap();
    let mut w = Walk {
        defs: &defs,
        handled: vec!["spec.peerRef".into()],
        kind: "X".into(),
        found: Vec::new(),
    };
    w.walk(&defs["X"], "", &mut BTreeSet::new());
    w.found.sort();
    assert_eq!(w.found, vec!["X spec.namespace", "X spec.targetNamespace"]);
}
