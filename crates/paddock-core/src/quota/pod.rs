//! What a pod charges and what its scopes are, as the apiserver computes them
//! (k8s.io/kubernetes pkg/quota/v1/evaluator/core/pods.go, component-helpers' `PodRequests`
//! and `PodLimits`, pkg/apis/core/v1/helper/qos): requests and limits aggregated over the
//! containers (init containers by their maximum, restartable init containers — sidecars —
//! added to both, pod-level resources where the pod states them, plus the overhead), the
//! quota names they charge (extended resources by `requests.` only), BestEffort (no CPU or
//! memory request or limit), Terminating (`activeDeadlineSeconds` set), the priority class and
//! cross-namespace pod affinity, and the containers that do not state a CPU or memory figure a
//! quota limits ("must specify").

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::names::is_extended_resource;
use super::quantity::{Usage, UsageError, add, quantity_at};

/// Resources a pod may state at the pod level (`spec.resources`, PodLevelResources).
fn pod_level_supported(name: &str) -> bool {
    matches!(name, "cpu" | "memory") || name.starts_with("hugepages-")
}

fn resource_list(v: &Value) -> Result<Usage, UsageError> {
    let mut out = Usage::new();
    for (k, q) in v.as_object().into_iter().flatten() {
        out.insert(k.clone(), quantity_at(q)?);
    }
    Ok(out)
}

fn add_all(to: &mut Usage, from: &Usage) {
    for (k, v) in from {
        add(to, k, *v);
    }
}

fn max_all(to: &mut Usage, from: &Usage) {
    for (k, v) in from {
        let slot = to.entry(k.clone()).or_insert(*v);
        if *v > *slot {
            *slot = *v;
        }
    }
}

fn is_sidecar(container: &Value) -> bool {
    container["restartPolicy"].as_str() == Some("Always")
}

/// `AggregateContainerRequests`/`AggregateContainerLimits`: the containers' sum, each
/// sidecar added to it, and the larger of that and every init container's peak (an init
/// container runs beside the sidecars started before it).
fn aggregate(pod: &Value, field: &str) -> Result<Usage, UsageError> {
    let mut total = Usage::new();
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        add_all(&mut total, &resource_list(&c["resources"][field])?);
    }
    let (mut sidecars, mut init_peak) = (Usage::new(), Usage::new());
    for c in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let own = resource_list(&c["resources"][field])?;
        let running = if is_sidecar(c) {
            add_all(&mut total, &own);
            add_all(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut r = own;
            add_all(&mut r, &sidecars);
            r
        };
        max_all(&mut init_peak, &running);
    }
    max_all(&mut total, &init_peak);
    Ok(total)
}

/// The pod-level figures of `field` the pod states, if any supported one is there.
fn pod_level(pod: &Value, field: &str) -> Result<Usage, UsageError> {
    Ok(resource_list(&pod["spec"]["resources"][field])?
        .into_iter()
        .filter(|(k, _)| pod_level_supported(k))
        .collect())
}

/// `IsPodLevelResourcesSet`: the pod states a supported resource at the pod level.
fn pod_level_set(pod: &Value) -> bool {
    ["requests", "limits"].iter().any(|f| {
        pod["spec"]["resources"][*f]
            .as_object()
            .is_some_and(|m| m.keys().any(|k| pod_level_supported(k)))
    })
}

/// `PodRequests`: aggregated, pod-level requests in their place, plus the overhead.
pub fn pod_requests(pod: &Value) -> Result<Usage, UsageError> {
    let mut reqs = aggregate(pod, "requests")?;
    for (k, v) in pod_level(pod, "requests")? {
        reqs.insert(k, v);
    }
    add_all(&mut reqs, &resource_list(&pod["spec"]["overhead"])?);
    Ok(reqs)
}

/// `PodLimits`: aggregated, pod-level limits in their place, the overhead added to the
/// non-zero limits only.
pub fn pod_limits(pod: &Value) -> Result<Usage, UsageError> {
    let mut limits = aggregate(pod, "limits")?;
    if pod_level_set(pod) {
        for (k, v) in pod_level(pod, "limits")? {
            limits.insert(k, v);
        }
    }
    for (k, v) in resource_list(&pod["spec"]["overhead"])? {
        if let Some(slot) = limits.get_mut(&k).filter(|l| l.0 != 0) {
            *slot = slot.plus(v);
        }
    }
    Ok(limits)
}

/// The quota names a non-terminal pod charges besides `pods` (`podComputeUsageHelper`):
/// `cpu`, `memory`, `ephemeral-storage` and `hugepages-<size>` under their own name and as
/// `requests.<name>`; extended resources as `requests.<name>` only; `limits.<name>` for cpu,
/// memory and ephemeral-storage. Other names a pod states charge nothing.
pub fn pod_compute(pod: &Value, u: &mut Usage) -> Result<(), UsageError> {
    for (res, q) in pod_requests(pod)? {
        let native = matches!(res.as_str(), "cpu" | "memory" | "ephemeral-storage")
            || res.starts_with("hugepages-");
        if native {
            add(u, &res, q);
            add(u, &format!("requests.{res}"), q);
        } else if is_extended_resource(&res) {
            add(u, &format!("requests.{res}"), q);
        }
    }
    for (res, q) in pod_limits(pod)? {
        if matches!(res.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            add(u, &format!("limits.{res}"), q);
        }
    }
    Ok(())
}

/// Whether a quantity is above zero (an unreadable one counts as set: the apiserver would not
/// have accepted it).
fn positive(q: &Value) -> bool {
    quantity_at(q).map_or(true, |m| m.0 > 0)
}

/// QoS class BestEffort (`GetPodQOS`): the class the apiserver stored, else no container (or
/// the pod level, when stated) requests or limits CPU or memory above zero.
pub fn is_best_effort(pod: &Value) -> bool {
    if let Some(class) = pod["status"]["qosClass"].as_str().filter(|c| !c.is_empty()) {
        return class == "BestEffort";
    }
    let states = |list: &Value| {
        ["cpu", "memory"]
            .iter()
            .any(|r| list.get(*r).is_some_and(positive))
    };
    if pod["spec"]["resources"].is_object() {
        let r = &pod["spec"]["resources"];
        return !(states(&r["requests"]) || states(&r["limits"]));
    }
    !["containers", "initContainers"].iter().any(|list| {
        pod["spec"][*list]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| states(&c["resources"]["requests"]) || states(&c["resources"]["limits"]))
    })
}

/// Scope Terminating (`IsTerminating`): `spec.activeDeadlineSeconds` set and not negative.
pub fn is_terminating(pod: &Value) -> bool {
    pod["spec"]["activeDeadlineSeconds"]
        .as_i64()
        .is_some_and(|s| s >= 0)
}

/// The pod's priority class name, if it names one.
pub fn priority_class(pod: &Value) -> Option<&str> {
    pod["spec"]["priorityClassName"]
        .as_str()
        .filter(|c| !c.is_empty())
}

/// Scope CrossNamespacePodAffinity: a pod (anti-)affinity term, required or preferred, that
/// names namespaces or has a namespace selector.
pub fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let cross = |t: &Value| {
        t["namespaces"].as_array().is_some_and(|a| !a.is_empty())
            || !t["namespaceSelector"].is_null()
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|a| {
        let a = &pod["spec"]["affinity"][*a];
        a["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
            .any(cross)
            || a["preferredDuringSchedulingIgnoredDuringExecution"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|w| cross(&w["podAffinityTerm"]))
    })
}

/// The names whose absence in a container the apiserver refuses when a quota limits them
/// (a mistake Kubernetes keeps for compatibility, for CPU and memory only).
const MUST_STATE: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// The pod's containers that do not state a CPU or memory figure among `limited` (a quota's
/// resource names), by resource name (`Constraints` of the pod evaluator). Nothing is
/// required of a pod that states its resources at the pod level.
pub fn missing_pod_resources<'a>(
    pod: &Value,
    limited: impl IntoIterator<Item = &'a str>,
) -> BTreeMap<String, BTreeSet<String>> {
    let required: BTreeSet<&str> = limited
        .into_iter()
        .filter(|n| MUST_STATE.contains(n))
        .collect();
    let mut missing: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if required.is_empty() || pod_level_set(pod) {
        return missing;
    }
    for list in ["containers", "initContainers"] {
        for c in pod["spec"][list].as_array().into_iter().flatten() {
            let states = |field: &str, res: &str| !c["resources"][field][res].is_null();
            for name in &required {
                let stated = match *name {
                    "cpu" | "requests.cpu" => states("requests", "cpu"),
                    "memory" | "requests.memory" => states("requests", "memory"),
                    "limits.cpu" => states("limits", "cpu"),
                    _ => states("limits", "memory"),
                };
                if !stated {
                    let container = c["name"].as_str().unwrap_or_default().to_string();
                    missing
                        .entry((*name).to_string())
                        .or_default()
                        .insert(container);
                }
            }
        }
    }
    missing
}

/// `must specify limits.cpu for: a; requests.cpu for: a,b`, the pod evaluator's words.
pub fn must_specify(missing: &BTreeMap<String, BTreeSet<String>>) -> String {
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, cs)| {
            format!(
                "{r} for: {}",
                cs.iter().cloned().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    format!("must specify {}", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::Milli;
    use serde_json::json;

    fn compute(pod: &Value) -> Usage {
        let mut u = Usage::new();
        pod_compute(pod, &mut u).expect("readable");
        u
    }

    fn units(n: i64) -> Milli {
        Milli::units(n)
    }

    fn q(s: &str) -> Milli {
        Milli::parse(s).expect("quantity")
    }

    #[test]
    fn extended_resources_charge_requests_only() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "1"},
                                        "limits": {"nvidia.com/gpu": "1", "cpu": "2"}}},
            {"name": "b", "resources": {"requests": {"nvidia.com/gpu": "2", "example.com/foo": "3",
                                                     "kubernetes.io/native-thing": "1"},
                                        "limits": {"nvidia.com/gpu": "2"}}}
        ]}});
        let u = compute(&pod);
        assert_eq!(u["requests.nvidia.com/gpu"], units(3));
        assert_eq!(u["requests.example.com/foo"], units(3));
        assert!(!u.contains_key("limits.nvidia.com/gpu"));
        assert!(!u.contains_key("nvidia.com/gpu"));
        // names in the kubernetes.io domain are not extended resources
        assert!(!u.keys().any(|k| k.contains("native-thing")));
        assert_eq!(u["requests.cpu"], units(1));
        assert_eq!(u["cpu"], units(1));
        assert_eq!(u["limits.cpu"], units(2));
    }

    #[test]
    fn init_containers_count_by_their_peak_and_sidecars_add_up() {
        // The pod evaluator's own example: max(sum of regular, largest init) for GPUs too.
        let pod = json!({"spec": {
        "initContainers": [
            {"name": "i1", "resources": {"requests": {"nvidia.com/gpu": "4"}}},
            {"name": "i2", "resources": {"requests": {"nvidia.com/gpu": "1"}}}
        ],
        "containers": [
            {"name": "a", "resources": {"requests": {"nvidia.com/gpu": "1"}}},
            {"name": "b", "resources": {"requests": {"nvidia.com/gpu": "1"}}}
        ]}});
        assert_eq!(compute(&pod)["requests.nvidia.com/gpu"], units(4));
        // A sidecar (restartPolicy Always) runs beside the containers and every later init
        // container: 1 (sidecar) + max(2 regular, init 2 after the sidecar = 3) = 3 + ...
        let pod = json!({"spec": {
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                {"name": "init", "resources": {"requests": {"cpu": "2"}}}
            ],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}]}});
        // regular 0.5 + sidecar 1 = 1.5; init peak = 2 + 1 = 3 -> 3
        assert_eq!(compute(&pod)["requests.cpu"], units(3));
        let pod = json!({"spec": {
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                {"name": "init", "resources": {"requests": {"cpu": "100m"}}}
            ],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "2"}}}]}});
        assert_eq!(compute(&pod)["requests.cpu"], units(3));
    }

    #[test]
    fn overhead_adds_to_requests_and_to_stated_limits_only() {
        let pod = json!({"spec": {"overhead": {"cpu": "100m", "memory": "10Mi"},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}]}});
        let u = compute(&pod);
        assert_eq!(u["requests.cpu"], q("1100m"));
        assert_eq!(u["requests.memory"], q("10Mi"));
        assert_eq!(u["limits.cpu"], q("2100m"));
        assert!(!u.contains_key("limits.memory"));
    }

    #[test]
    fn hugepages_charge_both_names_and_pod_level_resources_replace_the_sum() {
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"hugepages-2Mi": "4Mi"}, "limits": {"hugepages-2Mi": "4Mi"}}}]}});
        let u = compute(&pod);
        assert_eq!(u["hugepages-2Mi"], q("4Mi"));
        assert_eq!(u["requests.hugepages-2Mi"], q("4Mi"));
        assert!(!u.contains_key("limits.hugepages-2Mi"));
        let pod = json!({"spec": {"resources": {"requests": {"cpu": "2"}, "limits": {"memory": "1Gi"}},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}});
        let u = compute(&pod);
        assert_eq!(u["requests.cpu"], units(2));
        assert_eq!(u["requests.memory"], q("64Mi"));
        assert_eq!(u["limits.memory"], q("1Gi"));
        assert!(missing_pod_resources(&pod, ["limits.cpu"]).is_empty());
    }

    #[test]
    fn best_effort_looks_at_cpu_and_memory_only() {
        let none = json!({"spec": {"containers": [{"name": "a"}]}});
        assert!(is_best_effort(&none));
        let gpu_only = json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}});
        assert!(is_best_effort(&gpu_only));
        let zero = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "0"}}}]}});
        assert!(is_best_effort(&zero));
        let init = json!({"spec": {"containers": [{"name": "a"}],
            "initContainers": [{"name": "i", "resources": {"limits": {"memory": "1Mi"}}}]}});
        assert!(!is_best_effort(&init));
        // the class the apiserver stored wins
        let stored =
            json!({"spec": {"containers": [{"name": "a"}]}, "status": {"qosClass": "Burstable"}});
        assert!(!is_best_effort(&stored));
        let pod_level = json!({"spec": {"resources": {"requests": {"cpu": "1"}}, "containers": [{"name": "a"}]}});
        assert!(!is_best_effort(&pod_level));
    }

    #[test]
    fn terminating_priority_and_cross_namespace_affinity() {
        assert!(is_terminating(
            &json!({"spec": {"activeDeadlineSeconds": 0}})
        ));
        assert!(!is_terminating(&json!({"spec": {}})));
        assert_eq!(
            priority_class(&json!({"spec": {"priorityClassName": "high"}})),
            Some("high")
        );
        assert_eq!(
            priority_class(&json!({"spec": {"priorityClassName": ""}})),
            None
        );
        let term = json!({"labelSelector": {}, "topologyKey": "k", "namespaceSelector": {}});
        let pod = json!({"spec": {"affinity": {"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]}}}});
        assert!(uses_cross_namespace_affinity(&pod));
        let local = json!({"spec": {"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k", "namespaces": []}]}}}});
        assert!(!uses_cross_namespace_affinity(&local));
    }

    #[test]
    fn must_specify_names_resources_and_containers() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}}},
            {"name": "b", "resources": {}}
        ], "initContainers": [{"name": "i"}]}});
        let m = missing_pod_resources(&pod, ["requests.cpu", "limits.cpu", "pods"]);
        assert_eq!(
            must_specify(&m),
            "must specify limits.cpu for: a,b,i; requests.cpu for: b,i"
        );
        assert!(missing_pod_resources(&pod, ["pods", "requests.nvidia.com/gpu"]).is_empty());
    }
}
