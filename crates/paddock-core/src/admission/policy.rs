//! The per-tenant policy object: what a tenant's workloads may ask of the shared cluster's
//! scheduler and network (docs/security.md "Tenant policy"). The platform admin sets it (admin
//! API `spec.policy`, `paddock tenant policy`, the config file's default); paddock's admission
//! webhook enforces it upstream for every object in the tenant's namespaces, whoever writes it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A tenant's policy. Every field has a default; an unknown field is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TenantPolicy {
    pub services: ServicePolicy,
    pub scheduling: SchedulingPolicy,
    pub ingress: IngressPolicy,
    /// The pod-security level enforced on every namespace of the tenant.
    pub pod_security: PodSecurityLevel,
    /// Shared built-in kinds the tenant's admins may write as a cluster admin would
    /// (`ingressclasses.networking.k8s.io`, ...; crate::catalog::platform_grant). Empty by default:
    /// a grant gives up isolation for that kind.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platform_kinds: Vec<String>,
    /// The tenant's pods and paddock (docs/inside.md).
    #[serde(skip_serializing_if = "InClusterPolicy::is_default")]
    pub in_cluster: InClusterPolicy,
    /// The OIDC issuers the tenant trusts (kube-apiserver's `AuthenticationConfiguration.jwt`
    /// entries; crate::identity::oidc). Empty by default: no bearer token but a tenant pod's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jwt: Vec<crate::identity::oidc::JwtAuthenticator>,
    /// Put the tenant to sleep after this long without a request of its own (`30m`, `2h`;
    /// docs/operations.md "Sleep and wake"); absent: it never sleeps by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sleep_after: Option<String>,
}

impl TenantPolicy {
    /// `sleepAfter` in seconds (checked by [`TenantPolicy::validate`]).
    pub fn sleep_after_seconds(&self) -> Option<u64> {
        self.sleep_after
            .as_deref()
            .and_then(|s| parse_sleep_after(s).ok())
    }
}

/// A policy's `sleepAfter` in seconds: a duration of the admin API's (`30m`, `2h`), at least a
/// second.
pub fn parse_sleep_after(s: &str) -> Result<u64, String> {
    let d = paddock_api::duration::parse_duration(s).map_err(|e| format!("sleepAfter: {e}"))?;
    match d.as_secs() {
        0 => Err(format!(
            "sleepAfter: {s:?} is no time at all; leave sleepAfter out to keep the tenant awake"
        )),
        n => Ok(n),
    }
}

/// Which of the tenant's namespaces keep the upstream's in-cluster configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct InClusterPolicy {
    /// Namespaces (the tenant's names) whose new pods are not pointed at paddock and the
    /// tenant DNS: they talk to the upstream apiserver with its names and their upstream
    /// rights. Only the platform sets it (it is part of the tenant's policy).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upstream_namespaces: Vec<String>,
}

impl InClusterPolicy {
    fn is_default(&self) -> bool {
        self == &InClusterPolicy::default()
    }
}

/// What Services a tenant may create.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ServicePolicy {
    /// `type: NodePort` (a port on every node of the cluster). Off by default.
    pub allow_node_port: bool,
    /// `type: LoadBalancer` (an address of the platform's load balancer). Off by default.
    pub allow_load_balancer: bool,
    /// `type: ExternalName`.
    pub external_name: ExternalNamePolicy,
    /// Endpoints and EndpointSlices written by the tenant itself.
    pub endpoints: EndpointsPolicy,
}

/// Whether a tenant may write Endpoints and EndpointSlices (the cluster's controllers always
/// may). docs/security.md "Tenant policy" says why the default refuses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum EndpointsPolicy {
    /// Refused, as Kubernetes' default roles do since CVE-2021-25740 (the default).
    #[default]
    Refused,
    /// Allowed: the tenant can point a Service at any address, other tenants' pods and the
    /// platform's included. For platforms whose tenants trust each other (and conformance runs).
    Unrestricted,
}

/// Whether a tenant may alias DNS names with `ExternalName` Services.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExternalNamePolicy {
    /// No ExternalName Services (the default).
    #[default]
    Refused,
    /// Only names outside the cluster's DNS domain (and not IP addresses): no alias of another
    /// tenant's or the platform's Services.
    OutsideClusterDomain,
}

/// The tenant's node pool and priority classes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SchedulingPolicy {
    /// Priority classes the tenant's pods may name. Absent: any class whose name does not
    /// start with `system-`; a list: only those; `["*"]`: every class, the platform's
    /// `system-cluster-critical` and `system-node-critical` included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_priority_classes: Option<Vec<String>>,
    /// Labels every pod of the tenant gets as its `nodeSelector` (the tenant's node pool);
    /// a pod naming a node (`nodeName`) must name one with these labels.
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations every pod of the tenant gets (the pool's taints). A pod may carry these
    /// and the node-condition tolerations (`node.kubernetes.io/*`), nothing else.
    pub tolerations: Vec<Toleration>,
}

/// A `core/v1` Toleration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// `Equal` (default) or `Exists`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub operator: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule`, `NoExecute`, or empty for all.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub effect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// Ingress hosts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct IngressPolicy {
    /// Domains the tenant's Ingress hosts must fall under (`example.com` allows
    /// `example.com` and `*.example.com` names); empty: any host. Hosts are unique across
    /// tenants either way (first claim wins).
    pub allowed_domains: Vec<String>,
}

/// Pod Security Standards level, weakest first (the derived order compares strictness).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PodSecurityLevel {
    /// No pod restriction at all: host ports, host network/PID/IPC, hostPath volumes,
    /// privileged containers on nodes other tenants share (docs/security.md "Pod security").
    /// A platform admin's per-tenant setting, never the default: the tenant may then label a
    /// namespace `privileged`; a namespace without a label still gets [`Self::stamped`].
    Privileged,
    /// The platform's floor.
    #[default]
    Baseline,
    /// Stricter; a tenant namespace cannot go below it.
    Restricted,
}

impl PodSecurityLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            PodSecurityLevel::Privileged => "privileged",
            PodSecurityLevel::Baseline => "baseline",
            PodSecurityLevel::Restricted => "restricted",
        }
    }

    /// A label value's level (anything unknown: None).
    pub fn parse(s: &str) -> Option<PodSecurityLevel> {
        match s {
            "privileged" => Some(PodSecurityLevel::Privileged),
            "baseline" => Some(PodSecurityLevel::Baseline),
            "restricted" => Some(PodSecurityLevel::Restricted),
            _ => None,
        }
    }

    /// Whether a namespace of a tenant at this level may carry enforce label `label`: a known
    /// level at least as strict as the tenant's.
    pub fn permits(self, label: &str) -> bool {
        PodSecurityLevel::parse(label).is_some_and(|l| l >= self)
    }

    /// The level a tenant namespace gets when it asks for none (or for one the tenant may not
    /// have): the tenant's level, but never below the platform's floor. `privileged` is only
    /// ever a namespace's explicit choice, so a tenant with the setting opts in namespace by
    /// namespace and an unlabelled namespace (a chart's, the four default ones) stays at
    /// baseline.
    pub fn stamped(self) -> PodSecurityLevel {
        self.max(PodSecurityLevel::Baseline)
    }
}

/// Why a policy document is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("spec.policy: {0}")]
pub struct PolicyError(pub String);

impl TenantPolicy {
    /// Parses and checks a policy document (JSON object).
    pub fn from_json(v: &serde_json::Value) -> Result<TenantPolicy, PolicyError> {
        let p: TenantPolicy =
            serde_json::from_value(v.clone()).map_err(|e| PolicyError(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    /// Checks what serde cannot: operators, effects, domain syntax.
    pub fn validate(&self) -> Result<(), PolicyError> {
        crate::identity::oidc::validate(&self.jwt).map_err(PolicyError)?;
        if let Some(s) = &self.sleep_after {
            parse_sleep_after(s).map_err(PolicyError)?;
        }
        for t in &self.scheduling.tolerations {
            if !matches!(t.operator.as_str(), "" | "Equal" | "Exists") {
                return Err(PolicyError(format!(
                    "scheduling.tolerations: operator {:?} must be Equal or Exists",
                    t.operator
                )));
            }
            if !matches!(
                t.effect.as_str(),
                "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute"
            ) {
                return Err(PolicyError(format!(
                    "scheduling.tolerations: effect {:?} must be NoSchedule, PreferNoSchedule or NoExecute",
                    t.effect
                )));
            }
            if t.key.is_empty() {
                return Err(PolicyError(
                    "scheduling.tolerations: a toleration needs a key (an empty key tolerates every taint of the cluster)".into(),
                ));
            }
        }
        crate::catalog::platform_grant::validate(&self.platform_kinds).map_err(PolicyError)?;
        for d in &self.ingress.allowed_domains {
            if d.is_empty() || d.starts_with('.') || d.starts_with('*') || d.contains('/') {
                return Err(PolicyError(format!(
                    "ingress.allowedDomains: {d:?} must be a DNS name such as example.com"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sleep_after_is_a_duration_of_a_second_or_more() {
        assert_eq!(parse_sleep_after("30m"), Ok(1800));
        assert_eq!(parse_sleep_after("8s"), Ok(8));
        assert!(parse_sleep_after("0s").is_err());
        assert!(parse_sleep_after("soon").is_err());
        let p = TenantPolicy::from_json(&json!({"sleepAfter": "10m"}));
        assert_eq!(p.map(|p| p.sleep_after_seconds()).ok().flatten(), Some(600));
        assert!(TenantPolicy::from_json(&json!({"sleepAfter": "0"})).is_err());
    }

    #[test]
    fn defaults_are_the_strict_ones() {
        let p = TenantPolicy::default();
        assert!(!p.services.allow_node_port && !p.services.allow_load_balancer);
        assert_eq!(p.services.external_name, ExternalNamePolicy::Refused);
        assert_eq!(p.pod_security, PodSecurityLevel::Baseline);
        assert!(p.scheduling.allowed_priority_classes.is_none());
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(TenantPolicy::from_json(&v).unwrap(), p);
    }

    #[test]
    fn unknown_fields_and_bad_values_are_refused() {
        assert!(TenantPolicy::from_json(&json!({"services": {"allowNodeport": true}})).is_err());
        assert!(TenantPolicy::from_json(&json!({"podSecurity": "none"})).is_err());
        let blanket = json!({"scheduling": {"tolerations": [{"operator": "Exists"}]}});
        assert!(
            TenantPolicy::from_json(&blanket)
                .unwrap_err()
                .0
                .contains("needs a key")
        );
        let p = TenantPolicy::from_json(&json!({"services": {"allowNodePort": true},
            "scheduling": {"nodeSelector": {"pool": "a"}, "tolerations": [{"key": "pool", "value": "a", "effect": "NoSchedule"}]}}))
        .unwrap();
        assert!(p.services.allow_node_port);
        assert_eq!(p.scheduling.node_selector["pool"], "a");
    }

    #[test]
    fn privileged_is_a_setting_below_the_floor_and_never_stamped() {
        use PodSecurityLevel::*;
        let p = TenantPolicy::from_json(&json!({"podSecurity": "privileged"})).unwrap();
        assert_eq!(p.pod_security, Privileged);
        assert!(Privileged < Baseline && Baseline < Restricted);
        for (level, label, ok) in [
            (Privileged, "privileged", true),
            (Privileged, "baseline", true),
            (Privileged, "restricted", true),
            (Privileged, "Privileged", false),
            (Privileged, "", false),
            (Baseline, "privileged", false),
            (Baseline, "baseline", true),
            (Baseline, "restricted", true),
            (Restricted, "baseline", false),
            (Restricted, "restricted", true),
        ] {
            assert_eq!(level.permits(label), ok, "{level:?} {label:?}");
        }
        assert_eq!(Privileged.stamped(), Baseline);
        assert_eq!(Baseline.stamped(), Baseline);
        assert_eq!(Restricted.stamped(), Restricted);
        assert_eq!(
            PodSecurityLevel::parse("privileged").map(|l| l.as_str()),
            Some("privileged")
        );
    }
}
