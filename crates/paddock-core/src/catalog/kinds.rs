//! Every fact paddock keeps about a built-in kind, one row per kind: the tenant's policy, the
//! tenant admins' verbs in the shared cluster-scope role, whether the kind's objects are
//! deleted with the tenant (and in which order), copied to every cluster of a spanning tenant,
//! counted in the usage report, spliced by the fast path, merged across clusters, and which
//! rights paddock's own credential needs on it. The lists that used to say these things one
//! by one (catalog policy, cluster-scope role, owned kinds' deletion order, replicated kinds,
//! counted kinds, paddock's rights, the splice's kinds) are functions over [`KINDS`].
//!
//! What a kind's *fields* hold is the other table, `rules::table`; the fast path's claim that
//! splicing a kind equals `object_down` is derived from it (`response::splice`).
//!
//! Scope is written here for the paths and roles paddock writes itself; the catalog still
//! takes every resource's scope from upstream discovery.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::{Policy, Scope};

/// One built-in kind and what paddock does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub group: &'static str,
    /// The version paddock lists and writes it at.
    pub version: &'static str,
    pub resource: &'static str,
    pub kind: &'static str,
    pub scope: Scope,
    /// What a tenant may do with it (unlisted kinds: namespaced ones are the tenant's,
    /// cluster-scoped ones forbidden).
    pub policy: Policy,
    /// Create-only review objects: no name, never stored, no tenant label.
    pub review: bool,
    /// A tenant-owned kind whose lists also show the platform's objects, read-only
    /// (`ResourceInfo::lists_platform_objects`).
    pub lists_platform: bool,
    /// Verbs of the tenant admins' shadow identity on it, cluster-wide: the shared
    /// cluster-scope role (`provision::cluster_scope_role`). Namespaced rights come from the
    /// namespace admin binding instead.
    pub tenant_verbs: &'static [&'static str],
    /// Subresources the shadow identity may get, update and patch.
    pub tenant_subresources: &'static [&'static str],
    /// Subresources refused whatever the policy.
    pub forbidden_subresources: &'static [&'static str],
    /// A cluster-scoped kind whose tenant objects are deleted with the tenant (namespaced
    /// kinds go with their namespaces). Deleted in the reverse of this table's order.
    pub deleted_with_tenant: bool,
    /// Every cluster of a spanning tenant holds its own copy (written to all, home first;
    /// created in this table's order).
    pub replicated: bool,
    /// A shared kind a spanning tenant sees merged from all its clusters.
    pub merged_when_spanning: bool,
    /// Counted per tenant in the usage report.
    pub counted: Counted,
    /// Taken by the splice fast path (`response::splice`) where its items allow.
    pub splice: bool,
    /// Verbs paddock's own credential needs on it, cluster-wide (`paddock_reconciler::rights`,
    /// the chart's ClusterRole), and what for.
    pub paddock_verbs: &'static [&'static str],
    pub paddock_why: &'static str,
}

/// How the usage report counts a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    No,
    /// Objects counted (metadata lists): by namespace, or by the tenant label when
    /// cluster-scoped.
    Objects,
    /// Read in full and tallied field by field (pods: phase, requests; claims: storage).
    InFull,
}

/// Every verb of a resource.
pub const ALL: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
/// Reading.
pub const READ: &[&str] = &["get", "list", "watch"];
/// RBAC kinds: every verb, and binding or escalating to rules the caller does not hold (the
/// admission guard confines what they name).
const ALL_RBAC: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "bind",
    "escalate",
];
/// Stamped by a built-in namespace template and watched by the template sync. Server-side
/// apply (a PATCH) creates what does not exist yet: the apiserver authorizes `patch`, and
/// `create` when the object is new.
const STAMPED: &[&str] = &["list", "watch", "create", "patch"];
/// Watched for the usage report only (a counted kind's figures come from a watch cache).
const USAGE: &[&str] = &["list", "watch"];
/// Workload controllers: watched for the usage report, and patched by a suspension with
/// `--stop-workloads` and the resume after it (core `lifecycle::workloads`).
const WORKLOADS: &[&str] = &["list", "watch", "patch"];
/// Kept in step by the RBAC resync, which watches them (by label), applies and deletes.
const RESYNCED: &[&str] = &["list", "watch", "create", "patch", "delete"];
/// Listed and deleted with the tenant, and applied (paddock's own objects of the kind).
const SWEPT_AND_APPLIED: &[&str] = &["list", "create", "patch", "delete"];

const fn row(
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    scope: Scope,
) -> Kind {
    Kind {
        group,
        version,
        resource,
        kind,
        scope,
        policy: unlisted_policy(scope),
        review: false,
        lists_platform: false,
        tenant_verbs: &[],
        tenant_subresources: &[],
        forbidden_subresources: &[],
        deleted_with_tenant: false,
        replicated: false,
        merged_when_spanning: false,
        counted: Counted::No,
        splice: false,
        paddock_verbs: &[],
        paddock_why: "",
    }
}

const fn namespaced(g: &'static str, v: &'static str, r: &'static str, k: &'static str) -> Kind {
    row(g, v, r, k, Scope::Namespaced)
}

const fn cluster(g: &'static str, v: &'static str, r: &'static str, k: &'static str) -> Kind {
    row(g, v, r, k, Scope::Cluster)
}

impl Kind {
    /// A cluster-scoped kind the tenant owns: names prefixed and labelled, every verb for the
    /// tenant's admins, deleted with the tenant.
    const fn owned(self) -> Kind {
        Kind {
            policy: Policy::TenantOwned,
            tenant_verbs: ALL,
            deleted_with_tenant: true,
            ..self
        }
    }
    /// Platform objects a tenant may read.
    const fn shared_read(self) -> Kind {
        Kind {
            policy: Policy::SharedReadOnly,
            tenant_verbs: READ,
            ..self
        }
    }
    /// Refused (listed so that the decision is visible).
    const fn forbidden(self) -> Kind {
        Kind {
            policy: Policy::Forbidden,
            ..self
        }
    }
    /// A review kind, created by the tenant admins' shadow with `verbs`.
    const fn review(self, verbs: &'static [&'static str]) -> Kind {
        Kind {
            policy: Policy::TenantOwned,
            review: true,
            tenant_verbs: verbs,
            ..self
        }
    }
    /// Owned, but deleted by the tenant's own list after the other kinds (namespaces).
    const fn deleted_last(self) -> Kind {
        Kind {
            deleted_with_tenant: false,
            ..self
        }
    }
    const fn counted(self, counted: Counted) -> Kind {
        Kind { counted, ..self }
    }
    const fn paddock(self, paddock_verbs: &'static [&'static str], why: &'static str) -> Kind {
        Kind {
            paddock_verbs,
            paddock_why: why,
            ..self
        }
    }
}

/// Setters of one field each, named after the field: `.status(..)` sets the subresources the
/// tenant's admins update, `.replicated()` turns a flag on.
macro_rules! setters {
    (values: $($value:ident => $field:ident),*; flags: $($flag:ident => $ffield:ident),*) => {
        impl Kind {
            $(const fn $value(self, $field: &'static [&'static str]) -> Kind {
                Kind { $field, ..self }
            })*
            $(const fn $flag(self) -> Kind {
                Kind { $ffield: true, ..self }
            })*
        }
    };
}

setters! {
    values: verbs => tenant_verbs, status => tenant_subresources,
        refuse_subresources => forbidden_subresources;
    flags: replicated => replicated, merged => merged_when_spanning,
        platform_listed => lists_platform, splice => splice
}

const CORE: &str = "";
const APPS: &str = "apps";
const BATCH: &str = "batch";
const RBAC: &str = "rbac.authorization.k8s.io";
const ADMISSION: &str = "admissionregistration.k8s.io";
const APF: &str = "flowcontrol.apiserver.k8s.io";
const NET: &str = "networking.k8s.io";
const STORAGE: &str = "storage.k8s.io";
const AUTHZ: &str = "authorization.k8s.io";
const AUTHN: &str = "authentication.k8s.io";
const METRICS: &str = "metrics.k8s.io";
const DISCOVERY: &str = "discovery.k8s.io";
const COUNTED: Counted = Counted::Objects;
const STATUS: &[&str] = &["status"];

/// The built-in kinds with a decision of their own. Order matters for the cluster-scoped kinds
/// deleted with a tenant (deleted bottom-up: the admission kinds first, as a tenant's policy
/// or webhook could refuse the deletion of its other objects) and for the replicated kinds
/// (created top-down: CRDs before what is made of them, RBAC before what it grants,
/// priority levels before the flow schemas that name them, policies before their bindings).
pub static KINDS: &[Kind] = &[
    // --- cluster-scoped kinds a tenant owns
    cluster(CORE, "v1", "namespaces", "Namespace")
        .owned()
        .deleted_last()
        .status(&["status", "finalize"])
        .paddock(
            &["get", "list", "watch", "create", "patch", "delete"],
            "tenant namespaces are provisioned (read first), fanned out over (list, watch) and deleted",
        ),
    cluster(CORE, "v1", "persistentvolumes", "PersistentVolume")
        .owned()
        .status(STATUS)
        .counted(COUNTED)
        .paddock(
            &["list", "watch", "delete"],
            "tenants' volumes are deleted with the tenant; counted for the usage report",
        ),
    cluster(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
    )
    .owned()
    .status(STATUS)
    .replicated()
    .counted(COUNTED)
    .paddock(
        &["list", "watch", "delete"],
        "tenants' CRDs are resynced and deleted with the tenant; counted for the usage report",
    ),
    // API priority and fairness, confined to the tenant's own requests and owning no seats
    // (rules/flowcontrol.rs).
    cluster(
        APF,
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
    )
    .owned()
    .status(STATUS)
    .replicated()
    .platform_listed()
    .paddock(
        RESYNCED,
        "the paddock-tenants priority level (tenant_priority_shares > 0); tenants' levels are listed and deleted with the tenant",
    ),
    cluster(APF, "v1", "flowschemas", "FlowSchema")
        .owned()
        .status(STATUS)
        .replicated()
        .platform_listed()
        .paddock(
            RESYNCED,
            "the paddock-tenants FlowSchema and each tenant's own (tenant_priority_shares > 0); tenants' FlowSchemas are listed and deleted with the tenant",
        ),
    cluster(RBAC, "v1", "clusterroles", "ClusterRole")
        .owned()
        .verbs(ALL_RBAC)
        .replicated()
        .counted(COUNTED)
        .paddock(
            &["list", "watch", "create", "patch", "delete", "bind", "escalate"],
            "paddock's tenant roles grant what paddock hands on to tenants",
        ),
    cluster(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding")
        .owned()
        .verbs(ALL_RBAC)
        .replicated()
        .counted(COUNTED)
        .paddock(
            RESYNCED,
            "the shared cluster-scope binding and tenants' custom-resources bindings",
        ),
    // The tenant's own admission policies and webhooks act on its namespaces of every cluster
    // (a webhook's service lives on one cluster: elsewhere its failurePolicy decides,
    // docs/clusters.md).
    cluster(
        ADMISSION,
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
    )
    .owned()
    .replicated()
    .paddock(
        SWEPT_AND_APPLIED,
        "tenants' webhooks are deleted with the tenant; paddock's own admission webhook is applied",
    ),
    cluster(
        ADMISSION,
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
    )
    .owned()
    .replicated()
    .paddock(
        SWEPT_AND_APPLIED,
        "tenants' webhooks are deleted with the tenant; paddock's own admission webhook is applied",
    ),
    cluster(
        ADMISSION,
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
    )
    .owned()
    .status(STATUS)
    .replicated()
    .paddock(
        SWEPT_AND_APPLIED,
        "the tenant guard policies (the Service-type one is removed when the admission webhook decides it); tenants' own policies are deleted with the tenant",
    ),
    cluster(
        ADMISSION,
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
    )
    .owned()
    .replicated()
    .paddock(
        SWEPT_AND_APPLIED,
        "the tenant guard policies' bindings; tenants' own bindings are deleted with the tenant",
    ),
    // --- reviews: create-only, special body rules (rules/reviews.rs)
    cluster(
        AUTHZ,
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
    )
    .review(&["create"]),
    cluster(
        AUTHZ,
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
    )
    .review(&["create"]),
    // A tenant admin's SubjectAccessReview (about a tenant identity: paddock-core maps its user
    // and groups into the tenant) is asked as the admin's shadow.
    cluster(AUTHZ, "v1", "subjectaccessreviews", "SubjectAccessReview").review(&["create"]),
    namespaced(
        AUTHZ,
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
    )
    .review(&[]),
    cluster(AUTHN, "v1", "selfsubjectreviews", "SelfSubjectReview").review(&[]),
    // A TokenReview is asked as the caller's shadow, and its answer authenticates only a token
    // of the tenant's own: any other token (another tenant's, the platform's) is answered
    // `authenticated: false` (rules/reviews.rs `token_review_status_down`).
    cluster(AUTHN, "v1", "tokenreviews", "TokenReview")
        .review(&["create"])
        .paddock(&["create"], "tenants' service-account tokens are reviewed"),
    // --- platform objects a tenant may read
    cluster(CORE, "v1", "nodes", "Node")
        .shared_read()
        .merged()
        // nodes/proxy reaches the kubelet API of a shared node (exec into any pod on it).
        .refuse_subresources(&["proxy"])
        .paddock(
            &["get"],
            "the admission webhook checks a pod's nodeName against the tenant's node pool",
        ),
    cluster(STORAGE, "v1", "storageclasses", "StorageClass")
        .shared_read()
        .merged(),
    cluster(STORAGE, "v1", "csidrivers", "CSIDriver").shared_read(),
    cluster(STORAGE, "v1", "csinodes", "CSINode").shared_read(),
    cluster("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass").shared_read(),
    cluster(NET, "v1", "ingressclasses", "IngressClass").shared_read(),
    cluster("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass").shared_read(),
    // Each tenant sees the APIServices of the groups its discovery shows, its own CRD groups'
    // under its names; another tenant's are dropped (rules/apiservice.rs). Never written: the
    // guard refuses every tenant write upstream (provision::guard `-refused`).
    cluster("apiregistration.k8s.io", "v1", "apiservices", "APIService").shared_read(),
    // `kubectl top` (catalog::OPEN_AGGREGATED_GROUPS): NodeMetrics are the shared nodes',
    // PodMetrics the tenant's own pods' (with the namespace admin binding).
    cluster(METRICS, "v1beta1", "nodes", "NodeMetrics").shared_read(),
    namespaced(METRICS, "v1beta1", "pods", "PodMetrics"),
    // --- refused (also the cluster-scoped default)
    cluster(CORE, "v1", "componentstatuses", "ComponentStatus").forbidden(),
    cluster(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
    )
    .forbidden(),
    cluster(STORAGE, "v1", "volumeattachments", "VolumeAttachment").forbidden(),
    cluster(
        ADMISSION,
        "v1beta1",
        "mutatingadmissionpolicies",
        "MutatingAdmissionPolicy",
    )
    .forbidden(),
    cluster(
        ADMISSION,
        "v1beta1",
        "mutatingadmissionpolicybindings",
        "MutatingAdmissionPolicyBinding",
    )
    .forbidden(),
    // --- namespaced kinds the tenant owns (the default) with facts of their own. The splice
    // fast path takes the kinds whose only references are names in the tenant's space.
    namespaced(CORE, "v1", "pods", "Pod")
        .splice()
        .counted(Counted::InFull)
        .paddock(
            USAGE,
            "usage report (metering.md): pods: count, phase, CPU and memory requests and limits",
        ),
    namespaced(
        CORE,
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
    )
    .counted(Counted::InFull)
    .paddock(
        USAGE,
        "usage report (metering.md): PersistentVolumeClaims: count and storage requested",
    ),
    namespaced(CORE, "v1", "configmaps", "ConfigMap")
        .splice()
        .counted(COUNTED)
        .paddock(USAGE, "usage report (metering.md): ConfigMaps: count"),
    // Counted where paddock may list them; paddock is never granted that (a `list` on secrets
    // grants their data cluster-wide), so by default they stay uncounted.
    namespaced(CORE, "v1", "secrets", "Secret")
        .splice()
        .counted(COUNTED),
    namespaced(CORE, "v1", "services", "Service")
        .splice()
        .counted(COUNTED)
        .paddock(
            &["list", "watch", "create", "patch"],
            "each tenant's default namespace gets its `kubernetes` Service; counted for the usage report; a tenant webhook's Service is looked up by the relay",
        ),
    // The `kubernetes` Service's Endpoints and EndpointSlice point at paddock (docs/inside.md).
    namespaced(CORE, "v1", "endpoints", "Endpoints").paddock(
        &["create", "patch"],
        "the `kubernetes` Endpoints of each tenant's default namespace point at paddock (in-cluster path)",
    ),
    namespaced(DISCOVERY, "v1", "endpointslices", "EndpointSlice").paddock(
        &["list", "watch", "create", "patch"],
        "the `kubernetes` EndpointSlice of each tenant's default namespace points at paddock (in-cluster path), at the ready addresses of paddock's own Service's slices (in_cluster_service)",
    ),
    namespaced(CORE, "v1", "serviceaccounts", "ServiceAccount")
        .splice()
        .counted(COUNTED)
        .paddock(USAGE, "usage report (metering.md): ServiceAccounts: count"),
    namespaced(CORE, "v1", "replicationcontrollers", "ReplicationController").splice(),
    namespaced(CORE, "v1", "podtemplates", "PodTemplate").splice(),
    namespaced(CORE, "v1", "resourcequotas", "ResourceQuota")
        .paddock(
            STAMPED,
            "each tenant namespace gets a quota (a namespace template's); the template sync watches the locked ones",
        ),
    namespaced(APPS, "v1", "deployments", "Deployment")
        .splice()
        .counted(COUNTED)
        .paddock(WORKLOADS, "usage report (metering.md): Deployments: count; stopped and brought back by a suspension or a sleep (operations.md)"),
    namespaced(APPS, "v1", "statefulsets", "StatefulSet")
        .counted(COUNTED)
        .paddock(WORKLOADS, "usage report (metering.md): StatefulSets: count; stopped and brought back by a suspension or a sleep (operations.md)"),
    namespaced(APPS, "v1", "daemonsets", "DaemonSet")
        .splice()
        .counted(COUNTED)
        .paddock(WORKLOADS, "usage report (metering.md): DaemonSets: count; stopped and brought back by a suspension (operations.md)"),
    namespaced(APPS, "v1", "replicasets", "ReplicaSet")
        .splice()
        .counted(COUNTED)
        .paddock(WORKLOADS, "usage report (metering.md): ReplicaSets: count; stopped and brought back by a suspension or a sleep (operations.md)"),
    namespaced(APPS, "v1", "controllerrevisions", "ControllerRevision").splice(),
    namespaced(BATCH, "v1", "jobs", "Job")
        .splice()
        .counted(COUNTED)
        .paddock(WORKLOADS, "usage report (metering.md): Jobs: count; stopped and brought back by a suspension (operations.md)"),
    namespaced(BATCH, "v1", "cronjobs", "CronJob")
        .splice()
        .counted(COUNTED)
        .paddock(WORKLOADS, "usage report (metering.md): CronJobs: count; stopped and brought back by a suspension or a sleep (operations.md)"),
    namespaced("coordination.k8s.io", "v1", "leases", "Lease").splice(),
    namespaced(NET, "v1", "ingresses", "Ingress")
        .counted(COUNTED)
        .paddock(
            USAGE,
            "Ingress-host claims no Ingress of their holder names any more are returned (claims_gc.rs); counted for the usage report",
        ),
    namespaced(NET, "v1", "networkpolicies", "NetworkPolicy")
        .counted(COUNTED)
        .paddock(
            STAMPED,
            "each tenant namespace gets a network policy (a namespace template's; the template sync watches the locked ones); counted for the usage report",
        ),
    namespaced(RBAC, "v1", "roles", "Role")
        .counted(COUNTED)
        .paddock(
            &["list", "watch", "bind"],
            "mirrors bind roles tenants wrote; counted for the usage report",
        ),
    namespaced(RBAC, "v1", "rolebindings", "RoleBinding")
        .counted(COUNTED)
        .paddock(
            RESYNCED,
            "namespace admin bindings and the mirrors of tenants' RBAC",
        ),
];

static BY_RESOURCE: LazyLock<HashMap<(&'static str, &'static str), &'static Kind>> =
    LazyLock::new(|| KINDS.iter().map(|k| ((k.group, k.resource), k)).collect());

/// The row of a built-in (group, resource), if it has one.
pub fn find(group: &str, resource: &str) -> Option<&'static Kind> {
    BY_RESOURCE.get(&(group, resource)).copied()
}

impl Kind {
    /// The collection path (`/api/v1/pods`, `/apis/apps/v1/deployments`).
    pub fn list_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}/{}", self.version, self.resource)
        } else {
            format!("/apis/{}/{}/{}", self.group, self.version, self.resource)
        }
    }

    /// `apiVersion` (`v1`, `apps/v1`).
    pub fn api_version(&self) -> String {
        super::join_api_version(self.group, self.version)
    }

    /// `resource.group` as kubectl spells it, and as the usage report names it (`pods`,
    /// `deployments.apps`).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_owned()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// The policy of a built-in resource: its row's, else namespaced ones are the tenant's and
/// cluster-scoped ones forbidden.
pub fn builtin_policy(group: &str, resource: &str, scope: Scope) -> Policy {
    find(group, resource).map_or_else(|| unlisted_policy(scope), |k| k.policy)
}

/// The policy of a built-in kind without a row: namespaced ones are the tenant's,
/// cluster-scoped ones forbidden.
pub const fn unlisted_policy(scope: Scope) -> Policy {
    match scope {
        Scope::Namespaced => Policy::TenantOwned,
        Scope::Cluster => Policy::Forbidden,
    }
}

/// The list paths of the cluster-scoped kinds deleted with a tenant, in deletion order.
pub fn deleted_with_tenant() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().rev().filter(|k| k.deleted_with_tenant)
}

/// The kinds every cluster of a spanning tenant holds a copy of, in creation order.
pub fn replicated() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().filter(|k| k.replicated)
}

/// The kinds the usage report counts.
pub fn counted() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().filter(|k| k.counted != Counted::No)
}

/// The kinds the splice fast path may take.
pub fn spliced() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().filter(|k| k.splice)
}

#[cfg(test)]
#[path = "kinds_tests.rs"]
mod tests;
