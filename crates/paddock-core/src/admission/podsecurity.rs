//! Pod-security level per tenant: every namespace of the tenant is enforced at the tenant's
//! level (baseline by default, restricted as an option, privileged as a platform admin's
//! setting) or stricter.

use serde_json::{Value, json};

use super::policy::PodSecurityLevel;
use super::{
    AdmissionRequest, Handler, PatchOp, Phase, Refusal, Rule, TenantContext, Verdict, pointer_token,
};

/// The pod-security enforce label.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";
/// The policy name in refusals.
pub const POLICY: &str = "pod-security";
/// `<prefix><tid>`: the upstream group paddock asserts, beside the caller's own, on a
/// namespace write of a tenant whose policy is `privileged` (`privileged_group`); the
/// admission guard lets only a request carrying the writer's own tenant's group label a
/// namespace `privileged`. Nothing else can carry it: a tenant's own groups are mapped into
/// `paddock:<tid>:...` (a tenant id is 6 characters, this segment is not), and no binding
/// names it.
pub const PRIVILEGED_GROUP_PREFIX: &str = "paddock:pod-security-privileged:";

/// Tenant `t`'s privileged group ([`PRIVILEGED_GROUP_PREFIX`]).
pub fn privileged_group(t: &crate::tenant::TenantId) -> String {
    format!("{PRIVILEGED_GROUP_PREFIX}{}", t.as_str())
}

const NAMESPACE_WRITES: &[Rule] = &[Rule {
    api_groups: &[""],
    resources: &["namespaces"],
    operations: &["CREATE", "UPDATE"],
}];

fn level_of(ns: &Value) -> Option<PodSecurityLevel> {
    ns["metadata"]["labels"][ENFORCE_LABEL]
        .as_str()
        .and_then(PodSecurityLevel::parse)
}

/// Mutating: raises a namespace's enforce label to the tenant's level.
pub struct NamespacePodSecurity;

impl Handler for NamespacePodSecurity {
    fn name(&self) -> &'static str {
        "namespace-pod-security"
    }
    fn phase(&self) -> Phase {
        Phase::Mutating
    }
    fn rules(&self) -> &'static [Rule] {
        NAMESPACE_WRITES
    }
    /// Raises a level of the platform's (baseline or stricter) weaker than the tenant's (as
    /// paddock's own lock raises a label below the platform's), and sets the label on a new
    /// namespace without one (the tenant's level, baseline at least: `stamped`). Anything else
    /// (`privileged` where the tenant may not, an unknown value, removing the label) is left
    /// for the validating step and the guard to refuse: a tenant asking for less than it may
    /// gets a refusal.
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict {
        let want = ctx.policy.pod_security;
        let labels = &req.object["metadata"]["labels"];
        let raise = match labels[ENFORCE_LABEL].as_str() {
            None => req.operation == "CREATE",
            Some(v) => PodSecurityLevel::parse(v)
                .is_some_and(|l| l >= PodSecurityLevel::Baseline && l < want),
        };
        if !raise {
            return Verdict::Allow;
        }
        let level = want.stamped().as_str();
        Verdict::Patch(vec![if labels.is_object() {
            PatchOp::add(
                format!("/metadata/labels/{}", pointer_token(ENFORCE_LABEL)),
                json!(level),
            )
        } else {
            PatchOp::add("/metadata/labels", json!({ENFORCE_LABEL: level}))
        }])
    }
}

/// Validating: a tenant namespace is enforced at the tenant's level or stricter.
pub struct NamespacePodSecurityCheck;

impl Handler for NamespacePodSecurityCheck {
    fn name(&self) -> &'static str {
        "namespace-pod-security-check"
    }
    fn phase(&self) -> Phase {
        Phase::Validating
    }
    fn rules(&self) -> &'static [Rule] {
        NAMESPACE_WRITES
    }
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict {
        let want = ctx.policy.pod_security;
        if level_of(&req.object).is_some_and(|l| l >= want) {
            return Verdict::Allow;
        }
        Verdict::Deny(Refusal::forbidden(
            POLICY,
            format!(
                "namespace {:?} must be enforced at the tenant's pod-security level {} or stricter ({ENFORCE_LABEL})",
                req.name,
                want.as_str()
            ),
        ))
    }
}
