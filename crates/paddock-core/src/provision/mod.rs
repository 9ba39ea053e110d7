//! What paddock installs upstream, as data: the names, labels and groups of the objects it
//! keeps there, the platform-wide bootstrap (the shared cluster-scope role, the admission
//! guard policies, the tenants' priority level), and each tenant namespace's own objects.
//! The reconciler (`paddock-reconciler`) writes them, [`reflect`] is the pure half of the
//! watches that keep them in place ([`resync`]: what the tenant resync watches and how it
//! judges), and [`lease`] the pure half of the leader election that decides which replica
//! does the once-per-fleet work; nothing here does I/O.

pub mod builtin_roles;
pub mod custom_resources;
pub mod guard;
pub mod lease;
pub mod reflect;
pub mod resync;
pub mod suspended;

use serde_json::{Value, json};

use crate::catalog::kinds::KINDS;
use crate::tenant::{TENANT_LABEL, TenantId};

use crate::identity::upstream_admin_group;

/// The tenant's default namespaces (its view).
pub const DEFAULT_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];
/// In-tenant group of the tenant's administrators.
pub const TENANT_ADMIN_GROUP: &str = crate::identity::TENANT_ADMIN_GROUP;
/// Shared ClusterRole with the cluster-scoped rights of tenant admins, bound once (a
/// ClusterRoleBinding of the same name) to [`CLUSTER_SCOPE_GROUP`], which paddock asserts only
/// on requests of a tenant admin for cluster-scoped objects; the real identity of a tenant user
/// holds no cluster-scoped right at all.
pub const CLUSTER_SCOPE_ROLE: &str = "paddock:tenant-cluster-scope";
/// The group every tenant admin's *shadow* identity carries besides its own shadow groups.
///
/// One binding for all tenants, not one per tenant: the apiserver's RBAC authorizer lists and
/// matches every ClusterRoleBinding of the cluster for every request of every user that is not
/// `system:masters`, so a binding per tenant made every request in the cluster cost
/// O(tenants) (docs/performance.md). Every tenant's admins had the same role anyway; what keeps
/// them apart is the admission guard (`paddock:tenant:<tid>`) and paddock's label-filtered
/// lists, not the binding. Not `paddock:cluster:<tid>:`-shaped, so no tenant
/// ClusterRoleBinding can name it (the guard), and no tenant-written group maps to it (tenant
/// groups become `paddock:<tid>:<g>`).
pub const CLUSTER_SCOPE_GROUP: &str = crate::identity::CLUSTER_SCOPE_GROUP;
use crate::tenant::MANAGED_FOR_LABEL;
/// Name of the RoleBinding paddock keeps in each tenant namespace.
pub const NAMESPACE_ADMIN_BINDING: &str = "paddock-tenant-admins";
/// Name of the NetworkPolicy paddock keeps in each tenant namespace (MTB NI-1).
pub const NAMESPACE_NETWORK_POLICY: &str = "paddock-tenant-isolation";
/// Name of the ResourceQuota paddock keeps in each tenant namespace (MTB FNS-2, HI NodePort).
pub const NAMESPACE_QUOTA: &str = "paddock-tenant-limits";
/// The pod-security level stamped on a tenant namespace that asks for none (a locked label).
/// A tenant's policy may raise it (`restricted`) or let the tenant's namespaces choose
/// `privileged` (crate::admission::policy::PodSecurityLevel).
pub const POD_SECURITY_LEVEL: &str = "baseline";
/// The pod-security enforce label.
pub const PSA_ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

/// Whether the reconciler keeps a tenant namespace's enforce label as it is: any known level,
/// `privileged` included. Who may write which level is decided where the label is written: the
/// request path's lock and the admission guard (a tenant's policy), and a policy change raises
/// the namespaces below the new level. A namespace without the label, or with an unknown
/// value, is set up with [`POD_SECURITY_LEVEL`].
pub fn keeps_namespace_level(label: Option<&str>) -> bool {
    label
        .and_then(crate::admission::policy::PodSecurityLevel::parse)
        .is_some()
}
/// Tenant ids refused because their identities would collide with paddock's own
/// (`paddock:tenant:<tid>` is the tenant marker group).
pub const RESERVED_TENANT_IDS: &[&str] = &["tenant"];

/// The per-tenant ClusterRoleBinding of the tenant admins' shadow group to
/// [`CLUSTER_SCOPE_ROLE`] that paddock wrote before [`CLUSTER_SCOPE_GROUP`]; removed when a
/// tenant is repaired (start-up) or deleted.
pub fn legacy_tenant_scope_binding_name(t: &TenantId) -> String {
    format!("paddock:tenant:{}", t.as_str())
}

/// Per-tenant ClusterRole (and its binding) for the tenant's custom resources (its CRD groups),
/// bound to the admins' shadow group; kept in step by `rbac_sync`, and present only while the
/// tenant has CRDs.
pub fn tenant_cluster_role_name(t: &TenantId) -> String {
    format!("paddock:tenant:{}:custom-resources", t.as_str())
}

pub fn managed_labels(t: &TenantId) -> Value {
    json!({MANAGED_FOR_LABEL: t.as_str(), "app.kubernetes.io/managed-by": "paddock"})
}

/// The ready addresses of a Service's EndpointSlices (`slices`), each with the slice's port
/// named `https` (else its first port), sorted and without repeats: where the in-cluster
/// path's `kubernetes` endpoints point when paddock runs in the cluster. An endpoint counts
/// unless its `ready` condition is false (absent means ready, as the API says); FQDN slices
/// are skipped.
pub fn ready_endpoints<'a>(slices: impl Iterator<Item = &'a Value>) -> Vec<std::net::SocketAddr> {
    let mut out = Vec::new();
    for slice in slices {
        if !matches!(slice["addressType"].as_str(), Some("IPv4" | "IPv6")) {
            continue;
        }
        let ports = slice["ports"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let port = ports
            .iter()
            .find(|p| p["name"].as_str() == Some("https"))
            .or_else(|| ports.first())
            .and_then(|p| p["port"].as_u64())
            .and_then(|p| u16::try_from(p).ok());
        let Some(port) = port else { continue };
        for e in slice["endpoints"].as_array().into_iter().flatten() {
            if e["conditions"]["ready"].as_bool() == Some(false) {
                continue;
            }
            for a in e["addresses"].as_array().into_iter().flatten() {
                if let Some(ip) = a.as_str().and_then(|a| a.parse::<std::net::IpAddr>().ok()) {
                    out.push(std::net::SocketAddr::new(ip, port));
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The `kubernetes` Service of a tenant's `default` namespace (upstream `default_ns`) and,
/// when paddock has in-cluster `endpoints`, its Endpoints and EndpointSlices pointing at
/// paddock (docs/inside.md): (apply path, object). All managed: the guard refuses the tenant
/// any change. The Endpoints are not mirrored (paddock writes the slices itself).
pub fn api_service_objects(
    t: &TenantId,
    default_ns: &str,
    endpoints: &[std::net::SocketAddr],
) -> Vec<(String, Value)> {
    const NAME: &str = crate::admission::inside::API_SERVICE;
    let mut labels = managed_labels(t);
    labels["component"] = json!("apiserver");
    labels["provider"] = json!("kubernetes");
    let target = endpoints.first().map_or(443, std::net::SocketAddr::port);
    let mut out = vec![(
        format!("/api/v1/namespaces/{default_ns}/services/{NAME}"),
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": NAME, "namespace": default_ns, "labels": labels},
               "spec": {"type": "ClusterIP", "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": target}]}}),
    )];
    if endpoints.is_empty() {
        return out;
    }
    let mut ports: Vec<u16> = endpoints.iter().map(|e| e.port()).collect();
    ports.sort_unstable();
    ports.dedup();
    let subsets: Vec<Value> = ports
        .iter()
        .map(|p| {
            let addresses: Vec<Value> = endpoints
                .iter()
                .filter(|e| e.port() == *p)
                .map(|e| json!({"ip": e.ip().to_string()}))
                .collect();
            json!({"addresses": addresses, "ports": [{"name": "https", "port": p, "protocol": "TCP"}]})
        })
        .collect();
    let mut ep_labels = managed_labels(t);
    ep_labels["endpointslice.kubernetes.io/skip-mirror"] = json!("true");
    out.push((
        format!("/api/v1/namespaces/{default_ns}/endpoints/{NAME}"),
        json!({"apiVersion": "v1", "kind": "Endpoints",
               "metadata": {"name": NAME, "namespace": default_ns, "labels": ep_labels},
               "subsets": subsets}),
    ));
    for (family, v6) in [("IPv4", false), ("IPv6", true)] {
        let of_family: Vec<&std::net::SocketAddr> =
            endpoints.iter().filter(|e| e.is_ipv6() == v6).collect();
        if of_family.is_empty() {
            continue;
        }
        // One slice per family and port (a slice has one port list for all its endpoints).
        for p in &ports {
            let addrs: Vec<Value> = of_family
                .iter()
                .filter(|e| e.port() == *p)
                .map(|e| json!({"addresses": [e.ip().to_string()], "conditions": {"ready": true}}))
                .collect();
            if addrs.is_empty() {
                continue;
            }
            let name = if v6 {
                format!("{NAME}-ipv6-{p}")
            } else if ports.len() == 1 {
                NAME.to_string()
            } else {
                format!("{NAME}-{p}")
            };
            let mut sl = managed_labels(t);
            sl["kubernetes.io/service-name"] = json!(NAME);
            sl["endpointslice.kubernetes.io/managed-by"] = json!("paddock.io");
            out.push((
                format!("/apis/discovery.k8s.io/v1/namespaces/{default_ns}/endpointslices/{name}"),
                json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                       "metadata": {"name": name, "namespace": default_ns, "labels": sl},
                       "addressType": family, "endpoints": addrs,
                       "ports": [{"name": "https", "port": p, "protocol": "TCP"}]}),
            ));
        }
    }
    out
}

/// The cluster-scope role shared by every tenant's admins (shadow identity): rights on the
/// cluster-scoped kinds a tenant owns (the admission guard limits writes to the tenant's prefix
/// and label; paddock label-filters lists) and reads of the shared read-only kinds. It grants
/// nothing inside any namespace.
pub fn cluster_scope_role() -> Value {
    let mut rules = Vec::new();
    for k in KINDS.iter().filter(|k| !k.tenant_verbs.is_empty()) {
        rules.push(
            json!({"apiGroups": [k.group], "resources": [k.resource], "verbs": k.tenant_verbs}),
        );
        if !k.tenant_subresources.is_empty() {
            let subs: Vec<String> = k
                .tenant_subresources
                .iter()
                .map(|s| format!("{}/{s}", k.resource))
                .collect();
            rules.push(json!({"apiGroups": [k.group], "resources": subs, "verbs": ["get", "update", "patch"]}));
        }
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": CLUSTER_SCOPE_ROLE, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "rules": rules
    })
}

/// The one binding of [`CLUSTER_SCOPE_ROLE`]: to [`CLUSTER_SCOPE_GROUP`].
pub fn cluster_scope_binding() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": CLUSTER_SCOPE_ROLE, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_SCOPE_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": CLUSTER_SCOPE_GROUP}]
    })
}

/// Name of the FlowSchema and the priority level of tenants' requests (API Priority and
/// Fairness).
pub const TENANT_PRIORITY_LEVEL: &str = "paddock-tenants";

/// Label (and its value) on the objects every tenant shares, which the bootstrap puts in place
/// and the leader keeps there (the APF level and FlowSchema, the cluster-scope role and
/// binding, the admission guard's policies): the leader's watches select by it
/// (paddock-reconciler `kept.rs`).
pub const KEPT_LABEL: (&str, &str) = ("paddock.io/kept", "bootstrap");

/// The priority level of tenants' requests. Without it they land in `global-default` (20
/// shares: about 50 seats of a default apiserver, shared with every other user), where 64
/// concurrent requests of one tenant already queue; with its own level tenants get seats in
/// proportion to `shares` and queue fairly among themselves (one queue per user, shuffle
/// sharded), and the rest of the cluster keeps its own.
pub fn tenant_priority_level(shares: u32) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": TENANT_PRIORITY_LEVEL, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": 50,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}
        }}
    })
}

/// The FlowSchema that sends every request paddock makes as a tenant (they all carry
/// [`crate::identity::ALL_TENANTS_GROUP`]) to [`tenant_priority_level`]. Its precedence
/// is ahead of `service-accounts` (9000) so tenants' service accounts, impersonated through
/// paddock, land there too; requests from inside tenant pods do not pass through paddock.
pub fn tenant_flow_schema() -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": TENANT_PRIORITY_LEVEL, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "spec": {
            "priorityLevelConfiguration": {"name": TENANT_PRIORITY_LEVEL},
            "matchingPrecedence": 8000,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": crate::identity::ALL_TENANTS_GROUP}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                   "clusterScope": true, "namespaces": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
            }]
        }
    })
}

/// Name of tenant `t`'s own FlowSchema, `paddock-tenants-<tid>-flow`: it carries `<tid>-`
/// like every other upstream object of the tenant (not at the start: that form is a tenant's
/// own object name, and tenants cannot write FlowSchemas).
pub fn tenant_flow_schema_name(t: &TenantId) -> String {
    format!("{TENANT_PRIORITY_LEVEL}-{}-flow", t.as_str())
}

/// Tenant `t`'s own FlowSchema: every request paddock makes as any user of `t` (they all
/// carry `paddock:tenant:<tid>`) is ONE flow of the `paddock-tenants` priority level — no
/// distinguisher — so APF's fair queuing shares the level among tenants, not among users: a
/// tenant with a hundred users (or service accounts) gets one tenant's share, not a hundred.
/// It matches ahead of the catch-all [`tenant_flow_schema`] (which, per user, only still
/// catches a request of a tenant whose FlowSchema is not there yet). Labelled with the tenant,
/// so other tenants' reads of the shared FlowSchemas do not show it.
pub fn tenant_own_flow_schema(t: &TenantId) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": tenant_flow_schema_name(t), "labels": {
            MANAGED_FOR_LABEL: t.as_str(), TENANT_LABEL: t.as_str(), "app.kubernetes.io/managed-by": "paddock"}},
        "spec": {
            "priorityLevelConfiguration": {"name": TENANT_PRIORITY_LEVEL},
            "matchingPrecedence": 7900,
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": crate::identity::tenant_group(t)}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                   "clusterScope": true, "namespaces": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
            }]
        }
    })
}

/// The RoleBinding that gives the tenant's admins full rights inside one of its namespaces.
pub fn namespace_admin_binding(t: &TenantId, upstream_ns: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": NAMESPACE_ADMIN_BINDING, "namespace": upstream_ns, "labels": managed_labels(t)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": upstream_admin_group(t)}]
    })
}

/// Default isolation of a tenant namespace: ingress only from the tenant's own namespaces
/// (MTB NI-1). Shown to the tenant as "from every namespace" (its own).
pub fn namespace_network_policy(t: &TenantId, upstream_ns: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": NAMESPACE_NETWORK_POLICY, "namespace": upstream_ns, "labels": managed_labels(t)},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [
                {"key": TENANT_LABEL, "operator": "In", "values": [t.as_str()]}
            ]}}]}]
        }
    })
}

/// Count limits of a tenant namespace (MTB FNS-2); no NodePorts or LoadBalancers (MTB HI)
/// unless the admission webhook decides those per tenant (its policy's services settings).
pub fn namespace_quota(t: &TenantId, upstream_ns: &str, admission_webhook: bool) -> Value {
    let mut quota = namespace_quota_fixed(t, upstream_ns);
    if admission_webhook && let Some(hard) = quota["spec"]["hard"].as_object_mut() {
        hard.remove("services.nodeports");
        hard.remove("services.loadbalancers");
    }
    quota
}

fn namespace_quota_fixed(t: &TenantId, upstream_ns: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": NAMESPACE_QUOTA, "namespace": upstream_ns, "labels": managed_labels(t)},
        "spec": {"hard": {
            "pods": "500", "services": "200", "persistentvolumeclaims": "100", "secrets": "1000", "configmaps": "1000",
            "services.nodeports": "0", "services.loadbalancers": "0"
        }}
    })
}

/// Cluster-scoped kinds a tenant can own, as list paths, in deletion order (the kind table's).
/// Namespaces are handled separately (their deletion takes the namespaced contents with it),
/// after these: a tenant's policy or webhook could refuse the deletion of its namespaces.
pub fn owned_cluster_kinds() -> impl Iterator<Item = String> {
    crate::catalog::kinds::deleted_with_tenant().map(|k| k.list_path())
}

pub fn owned_by(obj: &Value, t: &TenantId, crd: bool) -> bool {
    let labelled = obj["metadata"]["labels"][TENANT_LABEL].as_str() == Some(t.as_str());
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    // Exact `<tid>-` check, never a bare prefix match: `foofoo` must not take `foofoox-...`.
    let prefixed = if crd {
        obj["spec"]["group"]
            .as_str()
            .is_some_and(|g| g.starts_with(&t.prefix()))
    } else {
        name.starts_with(&t.prefix())
    };
    labelled && prefixed
}

/// The first upstream namespace that already uses tenant `t`'s prefix without belonging to
/// it (`namespaces`: each name with its tenant label): a tenant with that id would claim it.
pub fn prefix_taken<'a>(
    t: &TenantId,
    namespaces: impl IntoIterator<Item = &'a Value>,
) -> Option<String> {
    let prefix = t.prefix();
    namespaces.into_iter().find_map(|ns| {
        let name = ns["metadata"]["name"].as_str()?;
        let owner = ns["metadata"]["labels"][TENANT_LABEL].as_str();
        (name.starts_with(&prefix) && owner != Some(t.as_str())).then(|| name.to_string())
    })
}

/// What the per-replica namespace index keeps of a namespace (for [`prefix_taken`]): its name,
/// resourceVersion and tenant label; a few dozen bytes of each of thousands.
pub fn namespace_owner_shape(o: Value) -> Option<Value> {
    let m = &o["metadata"];
    let mut labels = serde_json::Map::new();
    if let Some(t) = m["labels"].get(TENANT_LABEL) {
        labels.insert(TENANT_LABEL.into(), t.clone());
    }
    Some(json!({"metadata": {
        "name": m.get("name")?.clone(),
        "resourceVersion": m["resourceVersion"].clone(),
        "labels": labels,
    }}))
}

#[cfg(test)]
mod prefix_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ns(name: &str, tenant: Option<&str>) -> Value {
        let full = json!({"metadata": {"name": name, "resourceVersion": "7", "uid": "u",
            "managedFields": [{"manager": "x"}],
            "labels": tenant.map_or(json!({"a": "b"}), |t| json!({TENANT_LABEL: t, "a": "b"}))}});
        namespace_owner_shape(full).unwrap()
    }

    #[test]
    fn a_prefix_is_taken_by_a_namespace_of_another_owner_or_none() {
        let t = TenantId::parse("foofoo").unwrap();
        let mine = [
            ns("foofoo-a", Some("foofoo")),
            ns("foofoox", None),
            ns("kube-system", None),
        ];
        assert_eq!(
            prefix_taken(&t, &mine),
            None,
            "its own, and names without the dash"
        );
        let platform = [ns("foofoo-a", Some("foofoo")), ns("foofoo-db", None)];
        assert_eq!(prefix_taken(&t, &platform).as_deref(), Some("foofoo-db"));
        let other = [ns("foofoo-b", Some("barbar"))];
        assert_eq!(prefix_taken(&t, &other).as_deref(), Some("foofoo-b"));
    }

    #[test]
    fn the_shape_keeps_name_version_and_tenant_label_only() {
        assert_eq!(
            ns("foofoo-a", Some("foofoo")),
            json!({"metadata": {"name": "foofoo-a", "resourceVersion": "7", "labels": {TENANT_LABEL: "foofoo"}}})
        );
        assert_eq!(ns("x", None)["metadata"]["labels"], json!({}));
    }
}

#[cfg(test)]
mod api_service_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ready_addresses_with_the_https_port() {
        let slices = [
            json!({"addressType": "IPv4", "ports": [{"name": "metrics", "port": 9090}, {"name": "https", "port": 8443}],
                   "endpoints": [{"addresses": ["10.0.0.2"], "conditions": {"ready": true}},
                                 {"addresses": ["10.0.0.3"], "conditions": {"ready": false}},
                                 {"addresses": ["10.0.0.1"]}]}),
            json!({"addressType": "IPv4", "ports": [{"port": 443}],
                   "endpoints": [{"addresses": ["10.0.0.2"]}]}),
            json!({"addressType": "FQDN", "ports": [{"port": 443}],
                   "endpoints": [{"addresses": ["paddock.example"]}]}),
            json!({"addressType": "IPv6", "ports": [{"name": "https", "port": 8443}],
                   "endpoints": [{"addresses": ["fd00::2", "fd00::2"]}]}),
        ];
        let got: Vec<String> = ready_endpoints(slices.iter())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "10.0.0.1:8443",
                "10.0.0.2:443",
                "10.0.0.2:8443",
                "[fd00::2]:8443"
            ]
        );
        assert!(ready_endpoints([json!({})].iter()).is_empty());
    }

    #[test]
    fn the_api_service_points_at_paddock() {
        let t = TenantId::parse("abcdef").unwrap();
        let plain = api_service_objects(&t, "abcdef-default", &[]);
        assert_eq!(plain.len(), 1, "no endpoints: the Service alone");
        assert_eq!(plain[0].1["spec"]["ports"][0]["targetPort"], 443);
        let eps: Vec<std::net::SocketAddr> = vec![
            "10.0.0.2:8443".parse().unwrap(),
            "10.0.0.3:8443".parse().unwrap(),
        ];
        let objs = api_service_objects(&t, "abcdef-default", &eps);
        let kinds: Vec<&str> = objs
            .iter()
            .map(|(_, o)| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["Service", "Endpoints", "EndpointSlice"]);
        for (_, o) in &objs {
            assert_eq!(o["metadata"]["labels"][MANAGED_FOR_LABEL], "abcdef", "{o}");
        }
        assert_eq!(objs[0].1["spec"]["ports"][0]["targetPort"], 8443);
        assert_eq!(
            objs[1].1["subsets"][0]["addresses"],
            json!([{"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}])
        );
        assert_eq!(
            objs[1].1["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"],
            "true"
        );
        assert_eq!(objs[2].1["metadata"]["name"], "kubernetes");
        assert_eq!(objs[2].1["endpoints"].as_array().unwrap().len(), 2);
    }
}
