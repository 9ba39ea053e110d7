//! The tenant's cluster from the inside (docs/inside.md): every new pod of a tenant reaches
//! paddock as its API server and the tenant's DNS as its resolver.
//!
//! [`InClusterPods`] (mutating, pod CREATE) changes what the kubelet would give the pod:
//! - `KUBERNETES_SERVICE_HOST`/`_PORT` (and the link variables) in every container name
//!   paddock, not the upstream apiserver (a container's own value of one is left alone);
//! - the service-account volume's `ca.crt` is paddock's CA and its `namespace` file the
//!   tenant's name of the namespace, both read by the kubelet from annotations paddock sets
//!   ([`CA_ANNOTATION`], [`NAMESPACE_ANNOTATION`]) through the downward API: no object per
//!   namespace, nothing the controller-manager's root-CA publisher would overwrite;
//! - every downward-API `metadata.namespace` (env and volumes) gives the tenant's name too
//!   (operators read `POD_NAMESPACE` and then talk to paddock with it);
//! - with a tenant DNS, a `ClusterFirst` pod resolves through it, with the search path of its
//!   namespace as the tenant names it.
//!
//! The `kubernetes` Service of the tenant's `default` namespace, its Endpoints and its
//! EndpointSlice point at paddock (the reconciler writes them, labelled managed: the admission
//! guard refuses the tenant any change to them).
//!
//! Namespaces the platform lists in the tenant's `inCluster.upstreamNamespaces` are left
//! alone (their pods talk to the upstream with its names; only the platform can set it).

use serde_json::{Map, Value, json};

use super::{
    AdmissionRequest, Handler, PatchOp, Phase, Rule, TenantContext, Verdict, pointer_token,
};

/// The pod annotation the service-account volume's `ca.crt` is read from.
pub const CA_ANNOTATION: &str = "paddock.io/root-ca.crt";
/// The pod annotation holding the tenant's name of the pod's namespace.
pub const NAMESPACE_ANNOTATION: &str = "paddock.io/namespace";
/// What the cluster's controllers publish in every namespace and the service-account volume
/// reads `ca.crt` from.
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";
/// The Service (and its Endpoints and EndpointSlice) every cluster has in `default`.
pub const API_SERVICE: &str = "kubernetes";
/// The tenant namespace holding it.
pub const API_SERVICE_NAMESPACE: &str = "default";

/// Where a tenant's pods find paddock and the tenant DNS (platform config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InCluster {
    /// `KUBERNETES_SERVICE_HOST`: a name or address paddock's serving certificate holds.
    pub host: String,
    /// `KUBERNETES_SERVICE_PORT`.
    pub port: u16,
    /// The PEM bundle pods trust for paddock (its serving certificate's CA).
    pub ca_pem: String,
    /// The tenant DNS's address; None: pods keep the cluster's DNS (upstream names).
    pub dns: Option<String>,
}

const POD_CREATE: &[Rule] = &[Rule {
    api_groups: &[""],
    resources: &["pods"],
    operations: &["CREATE"],
}];

/// Mutating: points a new tenant pod at paddock and the tenant DNS.
pub struct InClusterPods;

impl Handler for InClusterPods {
    fn name(&self) -> &'static str {
        "in-cluster-pods"
    }
    fn phase(&self) -> Phase {
        Phase::Mutating
    }
    fn rules(&self) -> &'static [Rule] {
        POD_CREATE
    }
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict {
        let Some(ic) = ctx.platform.in_cluster.as_ref() else {
            return Verdict::Allow;
        };
        let Some(view_ns) = req
            .namespace
            .strip_prefix(ctx.tenant.as_str())
            .and_then(|r| r.strip_prefix('-'))
        else {
            return Verdict::Allow;
        };
        if ctx
            .policy
            .in_cluster
            .upstream_namespaces
            .iter()
            .any(|n| n == view_ns)
        {
            return Verdict::Allow;
        }
        let ops = pod_patch(&req.object, ic, view_ns, &ctx.platform.cluster_domain);
        if ops.is_empty() {
            Verdict::Allow
        } else {
            Verdict::Patch(ops)
        }
    }
}

/// The patch of one pod (pure; empty if nothing changes).
pub fn pod_patch(pod: &Value, ic: &InCluster, view_ns: &str, domain: &str) -> Vec<PatchOp> {
    let mut ops = annotation_ops(pod, ic, view_ns);
    let spec = &pod["spec"];
    for list in ["initContainers", "containers"] {
        for (i, c) in spec[list].as_array().into_iter().flatten().enumerate() {
            if let Some(env) = container_env(c, ic) {
                ops.push(PatchOp::add(format!("/spec/{list}/{i}/env"), env));
            }
        }
    }
    for (i, v) in spec["volumes"].as_array().into_iter().flatten().enumerate() {
        if v["configMap"]["name"].as_str() == Some(ROOT_CA_CONFIGMAP) {
            ops.push(PatchOp::replace(
                format!("/spec/volumes/{i}"),
                root_ca_volume(v),
            ));
            continue;
        }
        if let Some(sources) = v["projected"]["sources"].as_array() {
            let mapped: Vec<Value> = sources.iter().map(projected_source).collect();
            if &mapped != sources {
                ops.push(PatchOp::add(
                    format!("/spec/volumes/{i}/projected/sources"),
                    Value::Array(mapped),
                ));
            }
        }
        if let Some(items) = v["downwardAPI"]["items"].as_array() {
            let mapped: Vec<Value> = items.iter().map(downward_item).collect();
            if &mapped != items {
                ops.push(PatchOp::add(
                    format!("/spec/volumes/{i}/downwardAPI/items"),
                    Value::Array(mapped),
                ));
            }
        }
    }
    if let Some(dns) = &ic.dns {
        ops.extend(dns_ops(spec, dns, view_ns, domain));
    }
    ops
}

fn annotation_ops(pod: &Value, ic: &InCluster, view_ns: &str) -> Vec<PatchOp> {
    let wanted = [
        (CA_ANNOTATION, ic.ca_pem.as_str()),
        (NAMESPACE_ANNOTATION, view_ns),
    ];
    match pod["metadata"]["annotations"].as_object() {
        Some(a) => wanted
            .iter()
            .filter(|(k, v)| a.get(*k).and_then(Value::as_str) != Some(v))
            .map(|(k, v)| {
                PatchOp::add(
                    format!("/metadata/annotations/{}", pointer_token(k)),
                    json!(v),
                )
            })
            .collect(),
        None => {
            let m: Map<String, Value> = wanted
                .iter()
                .map(|(k, v)| ((*k).to_string(), json!(v)))
                .collect();
            vec![PatchOp::add("/metadata/annotations", Value::Object(m))]
        }
    }
}

/// The link variables the kubelet sets for the cluster's `kubernetes` Service, for paddock.
fn api_variables(ic: &InCluster) -> Vec<(String, String)> {
    let (h, p) = (&ic.host, ic.port);
    let addr = if h.contains(':') {
        format!("[{h}]:{p}")
    } else {
        format!("{h}:{p}")
    };
    vec![
        ("KUBERNETES_SERVICE_HOST".into(), h.clone()),
        ("KUBERNETES_SERVICE_PORT".into(), p.to_string()),
        ("KUBERNETES_SERVICE_PORT_HTTPS".into(), p.to_string()),
        ("KUBERNETES_PORT".into(), format!("tcp://{addr}")),
        ("KUBERNETES_PORT_443_TCP".into(), format!("tcp://{addr}")),
        ("KUBERNETES_PORT_443_TCP_PROTO".into(), "tcp".into()),
        ("KUBERNETES_PORT_443_TCP_PORT".into(), p.to_string()),
        ("KUBERNETES_PORT_443_TCP_ADDR".into(), h.clone()),
    ]
}

/// A container's new `env`: paddock's API variables first (a later variable may refer to
/// them), the container's own after (its own value of one wins, as it would over the
/// kubelet's), `metadata.namespace` references read from [`NAMESPACE_ANNOTATION`].
fn container_env(c: &Value, ic: &InCluster) -> Option<Value> {
    let own: Vec<Value> = c["env"].as_array().cloned().unwrap_or_default();
    let named = |n: &str| own.iter().any(|e| e["name"].as_str() == Some(n));
    let mut env: Vec<Value> = api_variables(ic)
        .into_iter()
        .filter(|(n, _)| !named(n))
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect();
    env.extend(own.iter().map(|e| {
        let mut e = e.clone();
        if let Some(r) = e.pointer_mut("/valueFrom/fieldRef") {
            *r = field_ref(r);
        }
        e
    }));
    (Some(&Value::Array(env.clone())) != c.get("env")).then_some(Value::Array(env))
}

fn field_ref(r: &Value) -> Value {
    if r["fieldPath"].as_str() == Some("metadata.namespace") {
        let mut r = r.clone();
        r["fieldPath"] = json!(format!("metadata.annotations['{NAMESPACE_ANNOTATION}']"));
        r
    } else {
        r.clone()
    }
}

fn downward_item(item: &Value) -> Value {
    let mut item = item.clone();
    if let Some(r) = item.get_mut("fieldRef") {
        *r = field_ref(r);
    }
    item
}

/// One source of a projected volume: the root-CA ConfigMap becomes the CA annotation (the
/// same paths), downward-API items read the tenant's namespace name.
fn projected_source(s: &Value) -> Value {
    if s["configMap"]["name"].as_str() == Some(ROOT_CA_CONFIGMAP) {
        return json!({"downwardAPI": {"items": root_ca_items(&s["configMap"])}});
    }
    if let Some(items) = s["downwardAPI"]["items"].as_array() {
        let mut s = s.clone();
        s["downwardAPI"]["items"] = Value::Array(items.iter().map(downward_item).collect());
        return s;
    }
    s.clone()
}

/// The CA annotation's items for the root-CA ConfigMap's `items` (its `ca.crt` key only, at
/// the same paths; none given: `ca.crt`).
fn root_ca_items(config_map: &Value) -> Vec<Value> {
    match config_map["items"].as_array() {
        Some(items) => items
            .iter()
            .filter(|i| i["key"].as_str() == Some("ca.crt"))
            .map(|i| ca_item(i["path"].as_str().unwrap_or("ca.crt"), i.get("mode")))
            .collect(),
        None => vec![ca_item("ca.crt", None)],
    }
}

/// A plain volume of the root-CA ConfigMap (as service meshes and operators mount it): the same
/// volume from the CA annotation, with its default mode.
fn root_ca_volume(v: &Value) -> Value {
    let mut d = json!({"items": root_ca_items(&v["configMap"])});
    if let Some(mode) = v["configMap"].get("defaultMode") {
        d["defaultMode"] = mode.clone();
    }
    json!({"name": v["name"], "downwardAPI": d})
}

fn ca_item(path: &str, mode: Option<&Value>) -> Value {
    let mut item = json!({"path": path, "fieldRef": {"apiVersion": "v1",
        "fieldPath": format!("metadata.annotations['{CA_ANNOTATION}']")}});
    if let Some(m) = mode {
        item["mode"] = m.clone();
    }
    item
}

/// `dnsPolicy: None` with the tenant DNS first and the search path of the namespace as the
/// tenant names it; the pod's own `dnsConfig` is kept after ours. Pods on the host network or
/// with a policy other than ClusterFirst keep theirs.
fn dns_ops(spec: &Value, dns: &str, view_ns: &str, domain: &str) -> Vec<PatchOp> {
    let policy = spec["dnsPolicy"].as_str().unwrap_or("ClusterFirst");
    if policy != "ClusterFirst" || spec["hostNetwork"].as_bool() == Some(true) {
        return Vec::new();
    }
    let own = &spec["dnsConfig"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    let mut nameservers = vec![dns.to_owned()];
    nameservers.extend(
        strings(&own["nameservers"])
            .into_iter()
            .filter(|n| n != dns),
    );
    nameservers.truncate(3);
    let mut searches = vec![
        format!("{view_ns}.svc.{domain}"),
        format!("svc.{domain}"),
        domain.to_owned(),
    ];
    for s in strings(&own["searches"]) {
        if !searches.contains(&s) {
            searches.push(s);
        }
    }
    let mut options: Vec<Value> = own["options"].as_array().cloned().unwrap_or_default();
    if !options.iter().any(|o| o["name"].as_str() == Some("ndots")) {
        options.insert(0, json!({"name": "ndots", "value": "5"}));
    }
    vec![
        PatchOp::add("/spec/dnsPolicy", json!("None")),
        PatchOp::add(
            "/spec/dnsConfig",
            json!({"nameservers": nameservers, "searches": searches, "options": options}),
        ),
    ]
}

#[cfg(test)]
#[path = "inside_tests.rs"]
mod tests;
