//! Scheduling policy: a tenant's pods get its node pool's selector and tolerations (mutating)
//! and may use only its priority classes, tolerations and nodes (validating). Applies to every
//! pod in the tenant's namespaces, whoever creates it (a Deployment's pods are created by the
//! controller-manager).

use serde_json::{Value, json};

use super::policy::Toleration;
use super::{
    AdmissionRequest, Handler, NodeFacts, PatchOp, Phase, Refusal, Rule, TenantContext, Verdict,
    pointer_token,
};

/// The policy name in refusals.
pub const POLICY: &str = "scheduling";

const POD_RULES: &[Rule] = &[Rule {
    api_groups: &[""],
    resources: &["pods"],
    operations: &["CREATE", "UPDATE"],
}];

const POD_CREATE: &[Rule] = &[Rule {
    api_groups: &[""],
    resources: &["pods"],
    operations: &["CREATE"],
}];

/// Mutating: adds the pool's node selector and tolerations to a new pod.
pub struct PodPlacement;

impl Handler for PodPlacement {
    fn name(&self) -> &'static str {
        "pod-placement"
    }
    fn phase(&self) -> Phase {
        Phase::Mutating
    }
    fn rules(&self) -> &'static [Rule] {
        POD_CREATE
    }
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict {
        let s = &ctx.policy.scheduling;
        let spec = &req.object["spec"];
        let mut ops = Vec::new();
        let missing: serde_json::Map<String, Value> = s
            .node_selector
            .iter()
            .filter(|(k, _)| spec["nodeSelector"].get(k.as_str()).is_none())
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        if !missing.is_empty() {
            if spec["nodeSelector"].is_object() {
                for (k, v) in missing {
                    ops.push(PatchOp::add(
                        format!("/spec/nodeSelector/{}", pointer_token(&k)),
                        v,
                    ));
                }
            } else {
                ops.push(PatchOp::add("/spec/nodeSelector", Value::Object(missing)));
            }
        }
        let present: Vec<Toleration> = tolerations_of(spec);
        let add: Vec<Value> = s
            .tolerations
            .iter()
            .filter(|t| !present.iter().any(|p| same_toleration(p, t)))
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect();
        if !add.is_empty() {
            if spec["tolerations"].is_array() {
                ops.extend(
                    add.into_iter()
                        .map(|t| PatchOp::add("/spec/tolerations/-", t)),
                );
            } else {
                ops.push(PatchOp::add("/spec/tolerations", Value::Array(add)));
            }
        }
        if ops.is_empty() {
            Verdict::Allow
        } else {
            Verdict::Patch(ops)
        }
    }
}

/// Validating: priority class, node selector, tolerations, nodeName.
pub struct PodScheduling;

impl Handler for PodScheduling {
    fn name(&self) -> &'static str {
        "pod-scheduling"
    }
    fn phase(&self) -> Phase {
        Phase::Validating
    }
    fn rules(&self) -> &'static [Rule] {
        POD_RULES
    }
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict {
        match check_pod(req, ctx) {
            Ok(()) => Verdict::Allow,
            Err(why) => Verdict::Deny(Refusal::forbidden(POLICY, why)),
        }
    }
}

fn check_pod(req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Result<(), String> {
    let s = &ctx.policy.scheduling;
    let spec = &req.object["spec"];
    let pod = format!(
        "pod {:?}",
        req.object["metadata"]["name"].as_str().unwrap_or(&req.name)
    );
    let tolerations = tolerations_of(spec);
    if req.operation == "UPDATE" {
        // Only tolerations may change after creation (additions); the rest was checked then,
        // and a later change of the policy does not make existing pods unchangeable.
        let old = tolerations_of(&req.old_object["spec"]);
        let new: Vec<&Toleration> = tolerations
            .iter()
            .filter(|t| !old.iter().any(|o| same_toleration(o, t)))
            .collect();
        return new
            .into_iter()
            .try_for_each(|t| check_toleration(t, ctx))
            .map_err(|e| format!("{pod}: {e}"));
    }
    if let Some(pc) = spec["priorityClassName"].as_str().filter(|p| !p.is_empty()) {
        let allowed = match &s.allowed_priority_classes {
            // `*`: every class, the platform's `system-*` ones included (a platform setting).
            Some(list) => list.iter().any(|a| a == pc || a == "*"),
            None => !pc.starts_with("system-"),
        };
        if !allowed {
            return Err(format!(
                "{pod}: priority class {pc:?} is not allowed for this tenant (allowed: {})",
                match &s.allowed_priority_classes {
                    Some(l) if l.is_empty() => "none".to_string(),
                    Some(l) => l.join(", "),
                    None => "any class not named system-*".into(),
                }
            ));
        }
    }
    for (k, v) in &s.node_selector {
        if spec["nodeSelector"][k].as_str() != Some(v.as_str()) {
            return Err(format!(
                "{pod}: the tenant's pods run on its node pool; nodeSelector must hold {k}={v}"
            ));
        }
    }
    for t in &tolerations {
        check_toleration(t, ctx).map_err(|e| format!("{pod}: {e}"))?;
    }
    if let Some(node) = node_wanted(req) {
        let Some(facts) = ctx.node.filter(|n| n.name == node) else {
            return Err(format!("{pod}: node {node:?} was not found"));
        };
        check_node(facts, ctx, &tolerations).map_err(|e| format!("{pod}: {e}"))?;
    }
    Ok(())
}

/// The node a new pod names in `spec.nodeName` (the server reads it for [`TenantContext::node`]).
pub fn node_wanted(req: &AdmissionRequest) -> Option<&str> {
    (req.operation == "CREATE"
        && req.resource.group.is_empty()
        && req.resource.resource == "pods"
        && req.sub_resource.is_empty())
    .then(|| req.object["spec"]["nodeName"].as_str())
    .flatten()
    .filter(|n| !n.is_empty())
}

/// A pod may name a node only if it is in the tenant's pool and the pod tolerates its taints
/// (what the scheduler would have checked; `nodeName` skips the scheduler).
fn check_node(node: &NodeFacts, ctx: &TenantContext<'_>, tol: &[Toleration]) -> Result<(), String> {
    for (k, v) in &ctx.policy.scheduling.node_selector {
        if node.labels.get(k) != Some(v) {
            return Err(format!(
                "nodeName {:?} is outside the tenant's node pool ({k}={v})",
                node.name
            ));
        }
    }
    for (key, value, effect) in &node.taints {
        if effect == "PreferNoSchedule" {
            continue;
        }
        if !tol.iter().any(|t| tolerates(t, key, value, effect)) {
            return Err(format!(
                "nodeName {:?} has the taint {key}={value}:{effect}, which the pod does not tolerate",
                node.name
            ));
        }
    }
    Ok(())
}

/// Node-condition taints every cluster sets (not-ready, unreachable, ...); tolerating them is
/// harmless and the apiserver's DefaultTolerationSeconds adds some itself.
const CONDITION_TAINT_PREFIX: &str = "node.kubernetes.io/";

fn check_toleration(t: &Toleration, ctx: &TenantContext<'_>) -> Result<(), String> {
    if t.key.starts_with(CONDITION_TAINT_PREFIX) {
        return Ok(());
    }
    let allowed = &ctx.policy.scheduling.tolerations;
    if allowed.iter().any(|a| covers(a, t)) {
        return Ok(());
    }
    let shown = if t.key.is_empty() {
        "a toleration of every taint (empty key, operator Exists)".to_string()
    } else {
        format!("the toleration {:?}", t.key)
    };
    Err(format!(
        "{shown} is not allowed: a tenant's pods may tolerate only its node pool's taints{} and node conditions (node.kubernetes.io/*)",
        if allowed.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                allowed
                    .iter()
                    .map(|a| a.key.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ))
}

/// Whether `allowed` covers `t`: same key; a narrower or equal match (same value unless
/// `allowed` is Exists; same effect unless `allowed` has none).
fn covers(allowed: &Toleration, t: &Toleration) -> bool {
    let op = |o: &str| if o.is_empty() { "Equal" } else { o }.to_string();
    allowed.key == t.key
        && (allowed.effect.is_empty() || allowed.effect == t.effect)
        && (op(&allowed.operator) == "Exists"
            || (op(&t.operator) == "Equal" && allowed.value == t.value))
}

fn tolerates(t: &Toleration, key: &str, value: &str, effect: &str) -> bool {
    let exists = t.operator == "Exists";
    (t.key.is_empty() && exists || t.key == key)
        && (t.effect.is_empty() || t.effect == effect)
        && (exists || t.value == value)
}

fn same_toleration(a: &Toleration, b: &Toleration) -> bool {
    let op = |o: &str| if o.is_empty() { "Equal" } else { o }.to_string();
    a.key == b.key
        && op(&a.operator) == op(&b.operator)
        && a.value == b.value
        && a.effect == b.effect
}

/// A pod spec's tolerations (unparsable entries become a blanket toleration, which is refused).
fn tolerations_of(spec: &Value) -> Vec<Toleration> {
    spec["tolerations"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| Toleration {
                    key: t["key"].as_str().unwrap_or_default().into(),
                    operator: t["operator"].as_str().unwrap_or_default().into(),
                    value: t["value"].as_str().unwrap_or_default().into(),
                    effect: t["effect"].as_str().unwrap_or_default().into(),
                    toleration_seconds: t["tolerationSeconds"].as_i64(),
                })
                .collect()
        })
        .unwrap_or_default()
}
