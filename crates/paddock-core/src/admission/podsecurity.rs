//! Pod-security level per tenant: every namespace of the tenant is enforced at the tenant's
//! level (baseline by default, restricted as an option) or stricter.

use serde_json::{Value, json};

use super::policy::PodSecurityLevel;
use super::{
    AdmissionRequest, Handler, PatchOp, Phase, Refusal, Rule, TenantContext, Verdict, pointer_token,
};

/// The pod-security enforce label.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";
/// The policy name in refusals.
pub const POLICY: &str = "pod-security";

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
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict {
        let want = ctx.policy.pod_security;
        if level_of(&req.object).is_some_and(|l| l >= want) {
            return Verdict::Allow;
        }
        let labels = &req.object["metadata"]["labels"];
        Verdict::Patch(vec![if labels.is_object() {
            PatchOp::add(
                format!("/metadata/labels/{}", pointer_token(ENFORCE_LABEL)),
                json!(want.as_str()),
            )
        } else {
            PatchOp::add("/metadata/labels", json!({ENFORCE_LABEL: want.as_str()}))
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
