//! Per-tenant usage figures tallied from upstream lists (docs/metering.md): the decisions of
//! what counts for whom; the server fetches the lists and keeps the result.
//!
//! A namespace belongs to a tenant when it carries the tenant label and the tenant's prefix
//! (both, as deletion decides); a namespaced object belongs to the tenant of its namespace; a
//! cluster-scoped object to the tenant of its label and prefix.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::catalog::Scope;
use crate::catalog::kinds::{self, Counted, Kind};
use crate::tenant::{TENANT_LABEL, tenant_of};

/// The kinds whose objects are counted one by one (metadata lists), of a scope: namespaced
/// ones by their namespace's tenant, cluster-scoped ones by the tenant label (upstream
/// selects them). Pods and PersistentVolumeClaims are tallied from their own full lists.
pub fn counted_objects(scope: Scope) -> impl Iterator<Item = &'static Kind> {
    kinds::counted().filter(move |k| k.counted == Counted::Objects && k.scope == scope)
}

/// The current figures of one tenant (what upstream holds for it). The usage report's JSON
/// shape of them is paddock-api's `usage::CurrentUsage`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantFigures {
    pub namespaces: u64,
    /// Every pod in the tenant's namespaces, whatever its phase.
    pub pods: u64,
    /// Pods in phase Running; the CPU and memory figures are theirs.
    pub running_pods: u64,
    pub cpu_requests_millicores: u64,
    pub cpu_limits_millicores: u64,
    pub memory_requests_bytes: u64,
    pub memory_limits_bytes: u64,
    /// `spec.resources.requests.storage` of every PersistentVolumeClaim.
    pub storage_requests_bytes: u64,
    /// Objects per resource (`configmaps`, `deployments.apps`, ...), every counted resource
    /// present (0 when none).
    pub objects: BTreeMap<String, u64>,
}

impl TenantFigures {
    /// Every figure zero, every counted resource present.
    pub fn empty() -> TenantFigures {
        let objects = kinds::counted().map(|k| (k.qualified(), 0)).collect();
        TenantFigures {
            objects,
            ..TenantFigures::default()
        }
    }

    /// Adds the same tenant's figures on another cluster (docs/metering.md "Several
    /// clusters"): namespaces, pods, claims and namespaced objects live on one cluster each
    /// and sum; the tenant's cluster-scoped objects are replicated on every cluster of a
    /// spanning tenant (its CRDs, roles, bindings), so they count once: the largest count of
    /// any cluster (a cluster the replication has not reached yet holds fewer).
    pub fn add_cluster(&mut self, other: &TenantFigures) {
        self.namespaces += other.namespaces;
        self.pods += other.pods;
        self.running_pods += other.running_pods;
        self.cpu_requests_millicores += other.cpu_requests_millicores;
        self.cpu_limits_millicores += other.cpu_limits_millicores;
        self.memory_requests_bytes += other.memory_requests_bytes;
        self.memory_limits_bytes += other.memory_limits_bytes;
        self.storage_requests_bytes += other.storage_requests_bytes;
        let replicated: Vec<String> = counted_objects(Scope::Cluster)
            .map(|k| k.qualified())
            .collect();
        for (resource, n) in &other.objects {
            let slot = self.objects.entry(resource.clone()).or_default();
            if replicated.contains(resource) {
                *slot = (*slot).max(*n);
            } else {
                *slot += n;
            }
        }
    }
}

/// Figures of every tenant, built from upstream lists in order: namespaces first.
#[derive(Debug, Default)]
pub struct UsageTally {
    namespace_owner: HashMap<String, String>,
    by_tenant: BTreeMap<String, TenantFigures>,
}

impl UsageTally {
    /// The figures of `tenant` (all zero when it holds nothing).
    pub fn figures(&self, tenant: &str) -> TenantFigures {
        self.by_tenant
            .get(tenant)
            .cloned()
            .unwrap_or_else(TenantFigures::empty)
    }

    /// Every tenant with something upstream.
    pub fn tenants(&self) -> impl Iterator<Item = (&String, &TenantFigures)> {
        self.by_tenant.iter()
    }

    fn entry(&mut self, tenant: &str) -> &mut TenantFigures {
        self.by_tenant
            .entry(tenant.to_string())
            .or_insert_with(TenantFigures::empty)
    }

    /// A Namespace from the list of tenant namespaces.
    pub fn add_namespace(&mut self, ns: &Value) {
        if let Some(t) = owner(ns) {
            if let Some(name) = ns["metadata"]["name"].as_str() {
                self.namespace_owner.insert(name.to_string(), t.clone());
            }
            self.entry(&t).namespaces += 1;
        }
    }

    fn namespace_tenant(&self, obj: &Value) -> Option<String> {
        let ns = obj["metadata"]["namespace"].as_str()?;
        self.namespace_owner.get(ns).cloned()
    }

    /// A Pod: counted, and its containers' requests and limits added while it is Running.
    pub fn add_pod(&mut self, pod: &Value) {
        let Some(t) = self.namespace_tenant(pod) else {
            return;
        };
        let f = self.entry(&t);
        f.pods += 1;
        *f.objects.entry("pods".into()).or_default() += 1;
        if pod["status"]["phase"].as_str() != Some("Running") {
            return;
        }
        f.running_pods += 1;
        for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
            let r = &c["resources"];
            // Saturating: a tenant's quantities (`8Ei` twice) may sum past `u64::MAX`.
            let add = |sum: &mut u64, v: u64| *sum = sum.saturating_add(v);
            add(&mut f.cpu_requests_millicores, milli(&r["requests"]["cpu"]));
            add(&mut f.cpu_limits_millicores, milli(&r["limits"]["cpu"]));
            add(
                &mut f.memory_requests_bytes,
                whole(&r["requests"]["memory"]),
            );
            add(&mut f.memory_limits_bytes, whole(&r["limits"]["memory"]));
        }
    }

    /// A PersistentVolumeClaim: counted, its storage request added.
    pub fn add_pvc(&mut self, pvc: &Value) {
        let Some(t) = self.namespace_tenant(pvc) else {
            return;
        };
        let f = self.entry(&t);
        *f.objects
            .entry("persistentvolumeclaims".into())
            .or_default() += 1;
        f.storage_requests_bytes = f
            .storage_requests_bytes
            .saturating_add(whole(&pvc["spec"]["resources"]["requests"]["storage"]));
    }

    /// An object of a counted namespaced resource.
    pub fn add_namespaced(&mut self, resource: &str, obj: &Value) {
        if let Some(t) = self.namespace_tenant(obj) {
            *self.entry(&t).objects.entry(resource.into()).or_default() += 1;
        }
    }

    /// An object of a counted cluster-scoped resource.
    pub fn add_cluster(&mut self, resource: &str, obj: &Value) {
        let crd = resource.starts_with("customresourcedefinitions.");
        let labelled = obj["metadata"]["labels"][TENANT_LABEL].as_str();
        let named = if crd {
            obj["spec"]["group"].as_str()
        } else {
            obj["metadata"]["name"].as_str()
        };
        if let Some(t) = labelled
            && named.and_then(tenant_of) == Some(t)
        {
            *self.entry(t).objects.entry(resource.into()).or_default() += 1;
        }
    }
}

/// The tenant of a namespace: its label, when its name carries that tenant's prefix.
fn owner(ns: &Value) -> Option<String> {
    let t = ns["metadata"]["labels"][TENANT_LABEL].as_str()?;
    let name = ns["metadata"]["name"].as_str()?;
    (tenant_of(name) == Some(t)).then(|| t.to_string())
}

fn milli(v: &Value) -> u64 {
    v.as_str()
        .and_then(parse_quantity_milli)
        .map_or(0, |m| u64::try_from(m).unwrap_or(u64::MAX))
}

fn whole(v: &Value) -> u64 {
    v.as_str()
        .and_then(parse_quantity_milli)
        // Round up, as the apiserver's Quantity.Value().
        .map_or(0, |m| u64::try_from(m.div_ceil(1000)).unwrap_or(u64::MAX))
}

/// A Kubernetes resource quantity in thousandths (`"250m"` is 250, `"1Gi"` is 1024³·1000),
/// rounded up to the next thousandth; None when it is not a quantity (or negative).
pub fn parse_quantity_milli(s: &str) -> Option<u128> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    // The number as a fraction: digits / 10^frac.len().
    let digits: u128 = format!("{int}{frac}").parse().ok()?;
    let denom = 10u128.checked_pow(u32::try_from(frac.len()).ok()?)?;
    let (mul, div): (u128, u128) = match suffix {
        "n" => (1, 1_000_000),
        "u" => (1, 1_000),
        "m" => (1, 1),
        "" => (1_000, 1),
        "k" => (1_000_000, 1),
        "M" => (1_000_000_000, 1),
        "G" => (1_000_000_000_000, 1),
        "T" => (1_000_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000_000, 1),
        "Ki" => (1_000 << 10, 1),
        "Mi" => (1_000 << 20, 1),
        "Gi" => (1_000 << 30, 1),
        "Ti" => (1_000 << 40, 1),
        "Pi" => (1_000 << 50, 1),
        "Ei" => (1_000 << 60, 1),
        e if e.starts_with(['e', 'E']) => {
            let exp: i32 = e[1..].parse().ok()?;
            if exp >= 0 {
                (1_000 * 10u128.checked_pow(exp.unsigned_abs())?, 1)
            } else if exp >= -3 {
                (1_000 / 10u128.pow(exp.unsigned_abs()), 1)
            } else {
                (1, 10u128.checked_pow(exp.unsigned_abs() - 3)?)
            }
        }
        _ => return None,
    };
    let top = digits.checked_mul(mul)?;
    let bottom = denom.checked_mul(div)?;
    Some(top.div_ceil(bottom))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity_milli("250m"), Some(250));
        assert_eq!(parse_quantity_milli("1"), Some(1000));
        assert_eq!(parse_quantity_milli("0.5"), Some(500));
        assert_eq!(parse_quantity_milli("1.5Gi"), Some(1_610_612_736_000));
        assert_eq!(parse_quantity_milli("64Mi"), Some(67_108_864_000));
        assert_eq!(parse_quantity_milli("1k"), Some(1_000_000));
        assert_eq!(parse_quantity_milli("100M"), Some(100_000_000_000));
        assert_eq!(parse_quantity_milli("1e3"), Some(1_000_000));
        assert_eq!(parse_quantity_milli("1500n"), Some(1));
        assert_eq!(parse_quantity_milli("abc"), None);
        assert_eq!(parse_quantity_milli("-1"), None);
        assert_eq!(parse_quantity_milli("1Xi"), None);
    }

    /// Quantities a tenant may write (`8Ei` is a valid one) once overflowed the sums (a
    /// panic in a debug build, a wrapped figure in a release one).
    #[test]
    fn huge_quantities_saturate() {
        let mut t = UsageTally::default();
        t.add_namespace(
            &json!({"metadata": {"name": "foofoo-a", "labels": {TENANT_LABEL: "foofoo"}}}),
        );
        let huge = json!({"requests": {"cpu": "8Ei", "memory": "8Ei"},
                          "limits": {"cpu": "8Ei", "memory": "8Ei"}});
        t.add_pod(
            &json!({"metadata": {"namespace": "foofoo-a"}, "status": {"phase": "Running"},
                          "spec": {"containers": [{"resources": huge}, {"resources": huge}]}}),
        );
        let pvc = json!({"metadata": {"namespace": "foofoo-a"},
                         "spec": {"resources": {"requests": {"storage": "8Ei"}}}});
        t.add_pvc(&pvc);
        t.add_pvc(&pvc);
        let f = t.figures("foofoo");
        assert_eq!(f.cpu_requests_millicores, u64::MAX);
        assert_eq!(f.cpu_limits_millicores, u64::MAX);
        assert_eq!(f.memory_requests_bytes, u64::MAX);
        assert_eq!(f.memory_limits_bytes, u64::MAX);
        assert_eq!(f.storage_requests_bytes, u64::MAX);
    }

    #[test]
    fn tally_attributes_by_namespace_and_label() {
        let mut t = UsageTally::default();
        t.add_namespace(
            &json!({"metadata": {"name": "foofoo-a", "labels": {TENANT_LABEL: "foofoo"}}}),
        );
        // Label and prefix disagree: nobody's.
        t.add_namespace(
            &json!({"metadata": {"name": "barbar-a", "labels": {TENANT_LABEL: "foofoo"}}}),
        );
        let pod = |ns: &str, phase: &str| {
            json!({"metadata": {"namespace": ns}, "status": {"phase": phase}, "spec": {"containers": [
                {"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "128Mi"}}},
                {"resources": {"requests": {"cpu": "50m"}}}
            ]}})
        };
        t.add_pod(&pod("foofoo-a", "Running"));
        t.add_pod(&pod("foofoo-a", "Pending"));
        t.add_pod(&pod("barbar-a", "Running"));
        t.add_pvc(&json!({"metadata": {"namespace": "foofoo-a"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}));
        t.add_namespaced(
            "configmaps",
            &json!({"metadata": {"namespace": "foofoo-a"}}),
        );
        t.add_namespaced("configmaps", &json!({"metadata": {"namespace": "default"}}));
        t.add_cluster(
            "clusterroles.rbac.authorization.k8s.io",
            &json!({"metadata": {"name": "foofoo-r", "labels": {TENANT_LABEL: "foofoo"}}}),
        );
        t.add_cluster(
            "clusterroles.rbac.authorization.k8s.io",
            &json!({"metadata": {"name": "admin"}}),
        );
        t.add_cluster("customresourcedefinitions.apiextensions.k8s.io", &json!({"metadata": {"name": "xs.foofoo-g.io", "labels": {TENANT_LABEL: "foofoo"}}, "spec": {"group": "foofoo-g.io"}}));
        let f = t.figures("foofoo");
        assert_eq!(f.namespaces, 1);
        assert_eq!((f.pods, f.running_pods), (2, 1));
        assert_eq!(f.cpu_requests_millicores, 150);
        assert_eq!(f.cpu_limits_millicores, 1000);
        assert_eq!(f.memory_requests_bytes, 64 << 20);
        assert_eq!(f.memory_limits_bytes, 128 << 20);
        assert_eq!(f.storage_requests_bytes, 1 << 30);
        assert_eq!(f.objects["configmaps"], 1);
        assert_eq!(f.objects["secrets"], 0);
        assert_eq!(f.objects["persistentvolumeclaims"], 1);
        assert_eq!(f.objects["clusterroles.rbac.authorization.k8s.io"], 1);
        assert_eq!(
            f.objects["customresourcedefinitions.apiextensions.k8s.io"],
            1
        );
        assert_eq!(t.figures("barbar"), TenantFigures::empty());
        assert_eq!(t.tenants().count(), 1);
    }

    #[test]
    fn clusters_add_up_and_replicated_cluster_scoped_objects_count_once() {
        let mut home = TenantFigures::empty();
        home.namespaces = 2;
        home.pods = 3;
        home.objects.insert("configmaps".into(), 4);
        home.objects
            .insert("clusterroles.rbac.authorization.k8s.io".into(), 2);
        let mut east = TenantFigures::empty();
        east.namespaces = 1;
        east.pods = 5;
        east.objects.insert("configmaps".into(), 1);
        east.objects
            .insert("clusterroles.rbac.authorization.k8s.io".into(), 1);
        home.add_cluster(&east);
        assert_eq!((home.namespaces, home.pods), (3, 8));
        assert_eq!(home.objects["configmaps"], 5);
        assert_eq!(home.objects["clusterroles.rbac.authorization.k8s.io"], 2);
    }
}
