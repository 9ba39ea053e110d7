//! Traffic objects stay inside the tenant: Service types (NodePort, LoadBalancer,
//! ExternalName, externalIPs), hand-written Endpoints and EndpointSlices, and Ingress hosts
//! (allowed domains; unique across tenants through store claims).

use super::policy::{EndpointsPolicy, ExternalNamePolicy};
use super::{AdmissionRequest, Claim, Handler, Phase, Refusal, Rule, TenantContext, Verdict};

/// Policy names in refusals.
pub const SERVICES_POLICY: &str = "services";
pub const ENDPOINTS_POLICY: &str = "endpoints";
pub const INGRESS_POLICY: &str = "ingress-hosts";

/// The claim kind of an Ingress host.
pub const INGRESS_HOST_CLAIM: &str = "ingress-host";

const WRITES: &[&str] = &["CREATE", "UPDATE"];

/// Validating: Service types and external addresses.
pub struct Services;

impl Handler for Services {
    fn name(&self) -> &'static str {
        "services"
    }
    fn phase(&self) -> Phase {
        Phase::Validating
    }
    fn rules(&self) -> &'static [Rule] {
        &[Rule {
            api_groups: &[""],
            resources: &["services"],
            operations: WRITES,
        }]
    }
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict {
        let p = &ctx.policy.services;
        let spec = &req.object["spec"];
        let svc = req.object["metadata"]["name"].as_str().unwrap_or(&req.name);
        let deny = |why: String| Verdict::Deny(Refusal::forbidden(SERVICES_POLICY, why));
        if spec["externalIPs"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            return deny(format!(
                "Service {svc:?}: externalIPs are not available to tenants (they capture traffic for any address, CVE-2020-8554)"
            ));
        }
        match spec["type"].as_str().unwrap_or("ClusterIP") {
            "NodePort" if !p.allow_node_port => deny(format!(
                "Service {svc:?}: type NodePort is not allowed for this tenant (the platform admin can allow it: services.allowNodePort)"
            )),
            "LoadBalancer" if !p.allow_load_balancer => deny(format!(
                "Service {svc:?}: type LoadBalancer is not allowed for this tenant (the platform admin can allow it: services.allowLoadBalancer)"
            )),
            "ExternalName" => {
                let name = spec["externalName"].as_str().unwrap_or_default();
                match check_external_name(name, p.external_name, &ctx.platform.cluster_domain) {
                    Ok(()) => Verdict::Allow,
                    Err(why) => deny(format!("Service {svc:?}: {why}")),
                }
            }
            _ => Verdict::Allow,
        }
    }
}

fn check_external_name(name: &str, policy: ExternalNamePolicy, domain: &str) -> Result<(), String> {
    match policy {
        ExternalNamePolicy::Refused => Err(
            "type ExternalName is not allowed for this tenant (the platform setting services.externalName is Refused)"
                .into(),
        ),
        ExternalNamePolicy::OutsideClusterDomain => {
            let n = name.trim_end_matches('.').to_ascii_lowercase();
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            let inside = n == domain
                || n.ends_with(&format!(".{domain}"))
                || n.ends_with(".svc")
                || n.split('.').count() < 2
                || n.parse::<std::net::IpAddr>().is_ok();
            if inside {
                Err(format!(
                    "externalName {name:?} must be a DNS name outside the cluster domain {domain:?} (no in-cluster Services, no IP addresses)"
                ))
            } else {
                Ok(())
            }
        }
    }
}

/// Validating: Endpoints and EndpointSlices may be written only by the cluster's controllers,
/// never by the tenant (its identities through paddock, or its service accounts' tokens).
/// The choice and its reasons: docs/security.md "Traffic objects".
pub struct EndpointWrites;

impl Handler for EndpointWrites {
    fn name(&self) -> &'static str {
        "endpoint-writes"
    }
    fn phase(&self) -> Phase {
        Phase::Validating
    }
    fn rules(&self) -> &'static [Rule] {
        &[
            Rule {
                api_groups: &[""],
                resources: &["endpoints"],
                operations: WRITES,
            },
            Rule {
                api_groups: &["discovery.k8s.io"],
                resources: &["endpointslices"],
                operations: WRITES,
            },
        ]
    }
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict {
        if !req.written_by_tenant()
            || ctx.policy.services.endpoints == EndpointsPolicy::Unrestricted
        {
            return Verdict::Allow;
        }
        let kind = if req.resource.resource == "endpoints" {
            "Endpoints"
        } else {
            "EndpointSlices"
        };
        Verdict::Deny(Refusal::forbidden(
            ENDPOINTS_POLICY,
            format!(
                "{kind} are written by the cluster's controllers from a Service's selector; a tenant cannot write them (they could point a Service at any address, CVE-2021-25740; the platform admin can allow it: services.endpoints Unrestricted)"
            ),
        ))
    }
}

/// Validating: Ingress hosts within the tenant's allowed domains, and claimed (first claim
/// wins across tenants).
pub struct IngressHosts;

impl Handler for IngressHosts {
    fn name(&self) -> &'static str {
        "ingress-hosts"
    }
    fn phase(&self) -> Phase {
        Phase::Validating
    }
    fn rules(&self) -> &'static [Rule] {
        &[Rule {
            api_groups: &["networking.k8s.io"],
            resources: &["ingresses"],
            operations: WRITES,
        }]
    }
    fn admit(&self, req: &AdmissionRequest, ctx: &TenantContext<'_>) -> Verdict {
        let hosts = ingress_hosts(&req.object);
        let domains = &ctx.policy.ingress.allowed_domains;
        for h in &hosts {
            if !domains.is_empty() && !domains.iter().any(|d| within(h, d)) {
                return Verdict::Deny(Refusal::forbidden(
                    INGRESS_POLICY,
                    format!(
                        "host {h:?} is outside the tenant's allowed domains ({})",
                        domains.join(", ")
                    ),
                ));
            }
        }
        if hosts.is_empty() {
            return Verdict::Allow;
        }
        Verdict::Claim(
            hosts
                .into_iter()
                .map(|key| Claim {
                    kind: INGRESS_HOST_CLAIM,
                    key,
                    policy: INGRESS_POLICY,
                })
                .collect(),
        )
    }
}

fn within(host: &str, domain: &str) -> bool {
    let host = host.strip_prefix("*.").unwrap_or(host);
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// Every host an Ingress names (rules and TLS), lowercased, deduplicated, sorted.
pub fn ingress_hosts(obj: &serde_json::Value) -> Vec<String> {
    let mut hosts: Vec<String> = obj["spec"]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["host"].as_str())
        .chain(
            obj["spec"]["tls"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|t| t["hosts"].as_array().into_iter().flatten())
                .filter_map(|h| h.as_str()),
        )
        .filter(|h| !h.is_empty())
        .map(|h| h.to_ascii_lowercase())
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// The Ingress hosts in use upstream, as (tenant id, host): each Ingress counts for the tenant
/// whose prefix its namespace carries (not its labels, which a writer could leave out), so a
/// host claim is only ever returned when none of its holder's Ingresses names the host.
pub fn ingress_hosts_in_use(
    ingresses: &[serde_json::Value],
) -> std::collections::HashSet<(String, String)> {
    ingresses
        .iter()
        .filter_map(|i| {
            let ns = i["metadata"]["namespace"].as_str()?;
            Some((crate::tenant::tenant_of(ns)?.to_string(), i))
        })
        .flat_map(|(tid, i)| ingress_hosts(i).into_iter().map(move |h| (tid.clone(), h)))
        .collect()
}

#[cfg(test)]
mod hosts_in_use_tests {
    use super::ingress_hosts_in_use;
    use serde_json::json;

    #[test]
    fn hosts_count_for_the_namespace_prefix_only() {
        let ingresses = [
            json!({"metadata": {"namespace": "alphaa-web", "labels": {"paddock.io/tenant": "bravoo"}},
                   "spec": {"rules": [{"host": "Shop.Example.com"}], "tls": [{"hosts": ["tls.example.com"]}]}}),
            json!({"metadata": {"namespace": "kube-system"}, "spec": {"rules": [{"host": "plat.example.com"}]}}),
            json!({"metadata": {"namespace": "bravoo-x"}, "spec": {}}),
        ];
        let used = ingress_hosts_in_use(&ingresses);
        assert_eq!(used.len(), 2);
        assert!(used.contains(&("alphaa".into(), "shop.example.com".into())));
        assert!(used.contains(&("alphaa".into(), "tls.example.com".into())));
    }
}
