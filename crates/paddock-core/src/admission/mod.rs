//! paddock's admission webhook: the pure decisions. The apiserver sends an `AdmissionReview`
//! (admission.k8s.io/v1) for objects in tenant namespaces; [`review`] runs every registered
//! [`Handler`] of the phase whose [`Rule`]s match, and answers allow, deny (a `Status` naming
//! the policy) or a JSON patch. The server (paddock-server `admission`) owns the listener, the
//! tenant lookup and the store; nothing here does I/O.
//!
//! Adding a handler: implement [`Handler`] in a new file of this module and add it to
//! [`registry`]; its [`Handler::rules`] go into the webhook configurations paddock installs
//! upstream (one Mutating and one Validating configuration, both limited to namespaces with
//! the `paddock.io/tenant` label), so nothing else needs to change.

pub mod inside;
pub mod podsecurity;
pub mod policy;
pub mod quota;
pub mod relay_review;
pub mod scheduling;
pub mod traffic;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::TenantId;
pub use policy::TenantPolicy;

/// Which webhook configuration a handler belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// MutatingWebhookConfiguration: may answer a patch.
    Mutating,
    /// ValidatingWebhookConfiguration: allow or deny only.
    Validating,
}

impl Phase {
    /// The URL path of the phase on the admission listener.
    pub fn path(self) -> &'static str {
        match self {
            Phase::Mutating => "/admission/mutate",
            Phase::Validating => "/admission/validate",
        }
    }
}

/// One rule of a webhook configuration (`rules[]`): operations on resources of API groups
/// (all versions). `resources` may name subresources (`pods/ephemeralcontainers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub api_groups: &'static [&'static str],
    pub resources: &'static [&'static str],
    pub operations: &'static [&'static str],
}

impl Rule {
    /// Whether a request is one this rule matches.
    pub fn matches(&self, req: &AdmissionRequest) -> bool {
        let resource = if req.sub_resource.is_empty() {
            req.resource.resource.clone()
        } else {
            format!("{}/{}", req.resource.resource, req.sub_resource)
        };
        // As the apiserver reads rules: `*` is every group, every operation, and every
        // resource but no subresource; `*/*` is everything.
        let any = |list: &[&str], v: &str| list.iter().any(|x| *x == "*" || *x == v);
        let resource_ok = self.resources.iter().any(|r| {
            *r == resource
                || *r == "*/*"
                || (*r == "*" && req.sub_resource.is_empty())
                || r.strip_prefix("*/") == Some(req.sub_resource.as_str())
        });
        any(self.api_groups, &req.resource.group)
            && resource_ok
            && any(self.operations, &req.operation)
    }

    /// The rule as a webhook configuration's `rules[]` entry. A wildcard resource rule is
    /// limited to namespaced kinds: cluster-scoped requests ignore the namespaceSelector and
    /// would all be sent (access reviews, nodes, every tenant's and the platform's objects);
    /// a handler wanting a cluster-scoped kind names it.
    pub fn to_json(&self) -> Value {
        let wildcard = self.resources.iter().any(|r| r.starts_with('*'));
        json!({"apiGroups": self.api_groups, "apiVersions": ["*"], "operations": self.operations,
               "resources": self.resources, "scope": if wildcard { "Namespaced" } else { "*" }})
    }
}

/// `request.resource` of an AdmissionReview.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

/// `request.userInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct UserInfo {
    pub username: String,
    pub groups: Vec<String>,
}

/// The part of `AdmissionReview.request` handlers read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AdmissionRequest {
    pub uid: String,
    pub resource: GroupVersionResource,
    pub sub_resource: String,
    pub name: String,
    pub namespace: String,
    /// CREATE, UPDATE, DELETE or CONNECT.
    pub operation: String,
    pub user_info: UserInfo,
    pub object: Value,
    pub old_object: Value,
    pub dry_run: bool,
}

impl AdmissionRequest {
    /// The namespace the object lives in (a Namespace's own name for namespaces). A namespace
    /// created with `generateName` straight at the apiserver has no name in the request: its
    /// object's name once the apiserver generated it (validating phase), else its
    /// `generateName`, which the generated name starts with (mutating phase). (Through
    /// paddock the name is generated before the create, wire::namespace_body.)
    pub fn tenant_namespace(&self) -> &str {
        if !(self.resource.group.is_empty() && self.resource.resource == "namespaces") {
            return &self.namespace;
        }
        let meta = |f: &str| {
            self.object["metadata"][f]
                .as_str()
                .filter(|s| !s.is_empty())
        };
        match self.name.as_str() {
            "" => meta("name").or_else(|| meta("generateName")).unwrap_or(""),
            name => name,
        }
    }

    /// Whether the writer is the tenant itself: a tenant identity paddock impersonates
    /// (`paddock:tenant:<tid>` group) or a service account of a tenant namespace (a tenant
    /// pod's token used straight at the apiserver). Controllers, the scheduler and platform
    /// admins are not.
    pub fn written_by_tenant(&self) -> bool {
        let u = &self.user_info;
        u.groups.iter().any(|g| g.starts_with("paddock:tenant:"))
            || u.username.starts_with("paddock:")
            || u.username
                .strip_prefix("system:serviceaccount:")
                .and_then(|rest| rest.split(':').next())
                .is_some_and(|ns| crate::tenant::tenant_of(ns).is_some())
    }
}

/// A node's labels and taints, fetched by the server when a pod names a node
/// ([`scheduling::node_wanted`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// `(key, value, effect)` of each taint.
    pub taints: Vec<(String, String, String)>,
}

/// Platform settings the handlers need besides the tenant's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    /// The cluster's DNS domain (`cluster.local`).
    pub cluster_domain: String,
    /// Where tenant pods find paddock and the tenant DNS; None: pods are left as they are.
    pub in_cluster: Option<std::sync::Arc<inside::InCluster>>,
}

impl Default for Platform {
    fn default() -> Self {
        Platform {
            cluster_domain: "cluster.local".into(),
            in_cluster: None,
        }
    }
}

/// What a handler knows besides the request.
#[derive(Debug, Clone, Copy)]
pub struct TenantContext<'a> {
    pub tenant: &'a TenantId,
    pub policy: &'a TenantPolicy,
    pub platform: &'a Platform,
    /// The node a pod names, when it names one and the server could read it.
    pub node: Option<&'a NodeFacts>,
}

/// A refusal: becomes the review's `status` (kubectl prints the message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
}

impl Refusal {
    /// A 403 `Forbidden` naming the policy: "paddock policy <name>: <why>".
    pub fn forbidden(policy: &str, why: impl std::fmt::Display) -> Refusal {
        Refusal {
            code: 403,
            reason: "Forbidden",
            message: format!("paddock policy {policy}: {why}"),
        }
    }
}

/// One JSON patch (RFC 6902) operation; paddock only adds and replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchOp {
    /// `add` or `replace`.
    pub op: &'static str,
    /// JSON pointer.
    pub path: String,
    pub value: Value,
}

impl PatchOp {
    pub fn add(path: impl Into<String>, value: Value) -> PatchOp {
        PatchOp {
            op: "add",
            path: path.into(),
            value,
        }
    }

    pub fn replace(path: impl Into<String>, value: Value) -> PatchOp {
        PatchOp {
            op: "replace",
            path: path.into(),
            value,
        }
    }
}

/// Escapes one JSON pointer token (`~` and `/`).
pub fn pointer_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// A handler's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny(Refusal),
    /// Mutating handlers only: allow with these changes.
    Patch(Vec<PatchOp>),
    /// Allow once the tenant holds each of these cluster-wide claims (kind, key); the server
    /// takes them in the store (compare-and-swap, first claim wins) and denies with the claim's
    /// owner named if another tenant holds one.
    Claim(Vec<Claim>),
}

/// A cluster-wide exclusive name a tenant must hold (e.g. an Ingress host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// What is claimed (`ingress-host`); a store key space.
    pub kind: &'static str,
    pub key: String,
    /// The policy named in a refusal.
    pub policy: &'static str,
}

/// A policy check on admission requests. Pure: everything it needs is in its arguments.
pub trait Handler: Send + Sync {
    /// Short name, used in logs and metrics.
    fn name(&self) -> &'static str;
    fn phase(&self) -> Phase;
    /// What it is called for (also what the webhook configuration registers).
    fn rules(&self) -> &'static [Rule];
    /// Decides one request ([`Rule::matches`] has been checked).
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict;
}

/// Every handler, in the order they run within a phase. New handlers are added here.
pub fn registry() -> Vec<Box<dyn Handler>> {
    vec![
        Box::new(scheduling::PodPlacement),
        Box::new(scheduling::PodScheduling),
        Box::new(inside::InClusterPods),
        Box::new(traffic::Services),
        Box::new(traffic::EndpointWrites),
        Box::new(traffic::IngressHosts),
        Box::new(podsecurity::NamespacePodSecurity),
        Box::new(podsecurity::NamespacePodSecurityCheck),
        Box::new(quota::TenantQuotaCreates),
    ]
}

/// The union of the rules of a phase's handlers, for its webhook configuration.
pub fn phase_rules(handlers: &[Box<dyn Handler>], phase: Phase) -> Vec<Value> {
    handlers
        .iter()
        .filter(|h| h.phase() == phase)
        .flat_map(|h| h.rules().iter().map(Rule::to_json))
        .collect()
}

/// The outcome of running a phase on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Allow,
    Deny(Refusal),
    /// Allowed with a patch (mutating phase).
    Patch(Vec<PatchOp>),
    /// Allowed if the claims can be taken.
    Claim(Vec<Claim>),
}

/// Runs the handlers of `phase` that match `req`, in registry order. Mutating handlers each
/// see the object as the previous ones patched it; the first denial wins.
pub fn run_phase(
    handlers: &[Box<dyn Handler>],
    phase: Phase,
    req: &AdmissionRequest,
    ctx: &TenantContext<'_>,
) -> Outcome {
    let mut working: Option<AdmissionRequest> = None;
    let mut patch = Vec::new();
    let mut claims = Vec::new();
    for h in handlers
        .iter()
        .filter(|h| h.phase() == phase && h.rules().iter().any(|r| r.matches(req)))
    {
        let current = working.as_ref().unwrap_or(req);
        match h.admit(current, ctx) {
            Verdict::Allow => {}
            Verdict::Deny(r) => return Outcome::Deny(r),
            Verdict::Patch(ops) if phase == Phase::Mutating => {
                let mut next = current.clone();
                for op in &ops {
                    if let Err(e) = apply_op(&mut next.object, op) {
                        return Outcome::Deny(Refusal {
                            code: 500,
                            reason: "InternalError",
                            message: format!("paddock admission handler {}: {e}", h.name()),
                        });
                    }
                }
                working = Some(next);
                patch.extend(ops);
            }
            Verdict::Patch(_) => {
                return Outcome::Deny(Refusal {
                    code: 500,
                    reason: "InternalError",
                    message: format!(
                        "paddock admission handler {} answered a patch in the validating phase",
                        h.name()
                    ),
                });
            }
            Verdict::Claim(c) => claims.extend(c),
        }
    }
    if !claims.is_empty() {
        Outcome::Claim(claims)
    } else if !patch.is_empty() {
        Outcome::Patch(patch)
    } else {
        Outcome::Allow
    }
}

/// Applies an `add`/`replace` to `doc` (parents must exist, as RFC 6902 requires).
pub fn apply_op(doc: &mut Value, op: &PatchOp) -> Result<(), String> {
    let Some(rest) = op.path.strip_prefix('/') else {
        return Err(format!("patch path {:?} is not a JSON pointer", op.path));
    };
    let tokens: Vec<String> = rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, parents)) = tokens.split_last() else {
        return Err("empty patch path".into());
    };
    let mut cur = doc;
    for t in parents {
        cur = match cur {
            Value::Object(m) => m.get_mut(t.as_str()),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| format!("patch path {:?}: {t:?} does not exist", op.path))?;
    }
    match cur {
        Value::Object(m) => {
            m.insert(last.clone(), op.value.clone());
            Ok(())
        }
        Value::Array(a) if last == "-" => {
            a.push(op.value.clone());
            Ok(())
        }
        // RFC 6902: `replace` an element, `add` inserts before it.
        Value::Array(a) => match (last.parse::<usize>(), op.op) {
            (Ok(i), "replace") if i < a.len() => {
                a[i] = op.value.clone();
                Ok(())
            }
            (Ok(i), "add") if i <= a.len() => {
                a.insert(i, op.value.clone());
                Ok(())
            }
            _ => Err(format!("patch path {:?}: no such element", op.path)),
        },
        _ => Err(format!("patch path {:?}: no such parent", op.path)),
    }
}

/// The `AdmissionReview` response: `uid`, `allowed`, and a `status` or a base64 JSON patch.
/// `patch_b64` is the caller's base64 of the patch (base64 is not in this crate).
pub fn review_response(uid: &str, outcome: &Outcome, patch_b64: Option<String>) -> Value {
    let mut response = json!({"uid": uid, "allowed": true});
    match outcome {
        Outcome::Deny(r) => {
            response["allowed"] = json!(false);
            response["status"] = json!({"status": "Failure", "message": r.message,
                                        "reason": r.reason, "code": r.code, "metadata": {}});
        }
        Outcome::Patch(_) => {
            if let Some(p) = patch_b64 {
                response["patchType"] = json!("JSONPatch");
                response["patch"] = json!(p);
            }
        }
        Outcome::Allow | Outcome::Claim(_) => {}
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// The JSON patch document of `ops`.
pub fn patch_document(ops: &[PatchOp]) -> Value {
    Value::Array(
        ops.iter()
            .map(|o| json!({"op": o.op, "path": o.path, "value": o.value}))
            .collect(),
    )
}

/// Why a body is not an AdmissionReview paddock can answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an admission.k8s.io/v1 AdmissionReview: {0}")]
pub struct ReviewError(pub String);

/// Decodes an `AdmissionReview` request body.
pub fn decode_review(body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
    #[derive(Deserialize)]
    struct Review {
        #[serde(rename = "apiVersion")]
        api_version: String,
        request: Option<AdmissionRequest>,
    }
    let r: Review = serde_json::from_slice(body).map_err(|e| ReviewError(e.to_string()))?;
    if r.api_version != "admission.k8s.io/v1" {
        return Err(ReviewError(format!("apiVersion {:?}", r.api_version)));
    }
    let req = r.request.ok_or_else(|| ReviewError("no request".into()))?;
    if req.uid.is_empty() {
        return Err(ReviewError("request.uid is empty".into()));
    }
    Ok(req)
}

#[cfg(test)]
mod tests;
