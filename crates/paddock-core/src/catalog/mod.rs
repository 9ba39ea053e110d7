//! The catalog of upstream resources (from aggregated discovery) and the explicit policy that
//! says, per resource, whether a tenant owns it, may read a shared one, or may not touch it.
//!
//! Scope always comes from upstream discovery, never from a hand-kept table; only the policy
//! is hand-kept, and its default is deny.

pub mod context;
pub mod kinds;
pub mod platform_grant;
pub mod webhook_relay;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use crate::error::TranslateError;
use crate::tenant::{TenantId, looks_tenant_prefixed};

/// Whether objects of a kind live in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    Namespaced,
    Cluster,
}

/// What a tenant may do with a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Names/namespaces rewritten, full verbs.
    TenantOwned,
    /// Platform objects, names not rewritten, only get/list/watch.
    SharedReadOnly,
    /// Refused with 403.
    Forbidden,
    /// A shared built-in kind the platform admin granted this tenant (crate::catalog::platform_grant):
    /// names not rewritten, full verbs, the platform's objects.
    PlatformGranted,
}

/// One resource as a tenant sees it, with the policy that applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// The tenant's view of the group ("example.com", not "foofoo-example.com").
    pub group: String,
    pub version: String,
    pub resource: String,
    pub kind: String,
    pub scope: Scope,
    pub policy: Policy,
    pub verbs: Vec<String>,
    pub subresources: Vec<String>,
    /// True when group is "<tid>-<g>" upstream (tenant's own CRD group).
    pub tenant_crd: bool,
    /// The group as upstream knows it (equal to `group` except for tenant CRD groups).
    pub upstream_group: String,
    /// Its row in the kind table, for a built-in kind that has one.
    pub builtin: Option<&'static kinds::Kind>,
}

impl ResourceInfo {
    /// Names of this resource are moved into the tenant's space (`<tid>-<name>`):
    /// cluster-scoped kinds the tenant owns, except the review kinds, which have no name.
    pub fn prefixes_name(&self) -> bool {
        self.scope == Scope::Cluster && self.policy == Policy::TenantOwned && !self.is_review()
    }

    /// Create-only review objects (access reviews, SelfSubjectReview): never stored, no name,
    /// no tenant label.
    pub fn is_review(&self) -> bool {
        self.builtin.is_some_and(|k| k.review)
    }

    /// The CRD kind itself.
    pub fn is_crd(&self) -> bool {
        self.upstream_group == "apiextensions.k8s.io"
            && self.resource == "customresourcedefinitions"
    }

    /// A tenant-owned cluster-scoped kind whose lists and watches also show the platform's
    /// objects, read-only and under their own names, as a cluster admin sees them beside its
    /// own: API priority and fairness (the tenant's FlowSchemas next to `exempt`,
    /// `global-default`, ...). paddock's per-tenant objects among them (`paddock.io/managed-for`)
    /// and other tenants' objects stay hidden.
    pub fn lists_platform_objects(&self) -> bool {
        self.prefixes_name() && self.builtin.is_some_and(|k| k.lists_platform)
    }

    /// Objects of this kind carry the tenant label upstream.
    pub fn stamps_label(&self) -> bool {
        self.prefixes_name()
    }

    /// `apiVersion` as the tenant writes it.
    pub fn api_version(&self) -> String {
        join_api_version(&self.group, &self.version)
    }

    /// `apiVersion` as upstream knows it.
    pub fn upstream_api_version(&self) -> String {
        join_api_version(&self.upstream_group, &self.version)
    }
}

pub fn join_api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// `"apps/v1"` -> ("apps", "v1"); `"v1"` -> ("", "v1").
pub fn split_api_version(av: &str) -> (&str, &str) {
    match av.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", av),
    }
}

/// API groups compiled into kube-apiserver. A tenant may not create a CRD in one of them, and
/// their names are never prefixed.
pub const BUILTIN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

pub fn is_builtin_group(g: &str) -> bool {
    BUILTIN_GROUPS.contains(&g)
}

/// Aggregated API groups that paddock opens to tenants by default where the platform serves
/// them: `metrics.k8s.io` (metrics-server; `kubectl top`). Not compiled into the apiserver, so
/// the group exists only where the platform installed its server; its names are never
/// prefixed (a tenant CRD group of the same name still shadows it, as for every platform group).
pub const OPEN_AGGREGATED_GROUPS: &[&str] = &["metrics.k8s.io"];

fn is_open_aggregated_group(g: &str) -> bool {
    OPEN_AGGREGATED_GROUPS.contains(&g)
}

/// Subresources refused whatever the resource's policy (the kind table's).
pub fn subresource_forbidden(group: &str, resource: &str, sub: &str) -> bool {
    kinds::find(group, resource).is_some_and(|k| k.forbidden_subresources.contains(&sub))
}

#[derive(Debug, Clone)]
struct RawResource {
    kind: String,
    scope: Scope,
    verbs: Vec<String>,
    subresources: Vec<String>,
    /// Its row in the kind table (built-in and open aggregated groups only).
    builtin: Option<&'static kinds::Kind>,
    /// The resolved resource as made by its first lookup, handed out again to every lookup
    /// that resolves it the same way (same policy, same tenant-CRD status): a lookup per
    /// request then costs a reference count, not a dozen strings.
    made: OnceLock<Arc<ResourceInfo>>,
}

#[derive(Debug, Clone, Default)]
struct RawGroup {
    /// In upstream preference order.
    versions: Vec<String>,
    /// version -> resource name -> resource (nested, so that a lookup borrows its keys).
    resources: BTreeMap<String, BTreeMap<String, RawResource>>,
}

/// Every upstream group, version and resource, plus the policy overrides. Built once from
/// aggregated discovery and shared behind an `Arc`.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    groups: BTreeMap<String, RawGroup>,
    /// (upstream group, kind) -> (resource, scope), from top-level resources.
    kinds: HashMap<(String, String), (String, Scope)>,
    /// Policies set by the operator for (upstream group, resource), e.g. a platform CRD
    /// shared read-only. Only non-tenant groups can be overridden.
    overrides: HashMap<(String, String), Policy>,
    /// Ids of the tenants that exist, when the server has told us. Free text is scrubbed of
    /// other tenants' names; without this list every `<6 chars>-name` token has to be treated
    /// as possibly another tenant's (so `worker-1` would be redacted too).
    known_tenants: Option<std::sync::Arc<std::collections::HashSet<String>>>,
    /// The platform grants of each tenant (crate::catalog::platform_grant), when the server has told us.
    platform_grants: Option<std::sync::Arc<crate::catalog::platform_grant::Grants>>,
    /// Where this cluster's apiserver reaches paddock's admission listener, when paddock relays
    /// the tenants' own webhooks (`webhook_relay`); None: their client configs keep naming the
    /// tenant's Service upstream.
    webhook_relay: Option<std::sync::Arc<webhook_relay::WebhookRelay>>,
}

#[derive(Deserialize)]
struct DiscoveryList {
    #[serde(default)]
    items: Vec<DiscoveryGroup>,
}
#[derive(Deserialize)]
struct DiscoveryGroup {
    #[serde(default)]
    metadata: DiscoveryMeta,
    #[serde(default)]
    versions: Vec<DiscoveryVersion>,
}
#[derive(Deserialize, Default)]
struct DiscoveryMeta {
    #[serde(default)]
    name: String,
}
#[derive(Deserialize)]
struct DiscoveryVersion {
    version: String,
    #[serde(default)]
    resources: Vec<DiscoveryResource>,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiscoveryResource {
    resource: String,
    #[serde(default)]
    response_kind: Option<GroupVersionKind>,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    subresources: Vec<DiscoverySubresource>,
}
#[derive(Deserialize)]
struct GroupVersionKind {
    #[serde(default)]
    kind: String,
}
#[derive(Deserialize)]
struct DiscoverySubresource {
    subresource: String,
}

impl Catalog {
    /// The same catalog, knowing which tenant ids exist (see [`Catalog::is_known_tenant`]).
    pub fn with_known_tenants(mut self, ids: impl IntoIterator<Item = String>) -> Catalog {
        self.known_tenants = Some(std::sync::Arc::new(ids.into_iter().collect()));
        self
    }

    /// The same catalog, knowing each tenant's platform grants.
    pub fn with_platform_grants(
        mut self,
        grants: crate::catalog::platform_grant::Grants,
    ) -> Catalog {
        self.platform_grants = Some(std::sync::Arc::new(grants));
        self
    }

    /// The same catalog, relaying the tenants' webhooks through paddock at `relay`.
    pub fn with_webhook_relay(
        mut self,
        relay: Option<std::sync::Arc<webhook_relay::WebhookRelay>>,
    ) -> Catalog {
        self.webhook_relay = relay;
        self
    }

    /// How the tenants' webhooks are relayed, if they are.
    pub fn webhook_relay(&self) -> Option<&webhook_relay::WebhookRelay> {
        self.webhook_relay.as_deref()
    }

    fn is_granted(&self, tenant: &TenantId, ug: &str, resource: &str) -> bool {
        self.platform_grants.as_ref().is_some_and(|g| {
            g.get(tenant.as_str())
                .is_some_and(|s| s.contains(&(ug.to_owned(), resource.to_owned())))
        })
    }

    /// Could `id` be a tenant? True for every id when the tenant list is unknown (the safe
    /// answer for scrubbing).
    pub fn is_known_tenant(&self, id: &str) -> bool {
        match &self.known_tenants {
            Some(set) => set.contains(id),
            None => true,
        }
    }

    /// From aggregated discovery documents (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) of
    /// `/api` and `/apis`, as returned by upstream (JSON bytes).
    pub fn from_aggregated(core: &[u8], apis: &[u8]) -> Result<Catalog, TranslateError> {
        let mut c = Catalog::default();
        for (doc, which) in [(core, "/api"), (apis, "/apis")] {
            let list: DiscoveryList = serde_json::from_slice(doc).map_err(|e| {
                TranslateError::Upstream(format!("aggregated discovery of {which}: {e}"))
            })?;
            for g in list.items {
                c.add_group(g);
            }
        }
        Ok(c)
    }

    fn add_group(&mut self, g: DiscoveryGroup) {
        let name = g.metadata.name;
        let entry = self.groups.entry(name.clone()).or_default();
        for v in g.versions {
            if !entry.versions.contains(&v.version) {
                entry.versions.push(v.version.clone());
            }
            for r in v.resources {
                let scope = if r.scope == "Cluster" {
                    Scope::Cluster
                } else {
                    Scope::Namespaced
                };
                let kind = r.response_kind.map(|k| k.kind).unwrap_or_default();
                let builtin = (is_builtin_group(&name) || is_open_aggregated_group(&name))
                    .then(|| kinds::find(&name, &r.resource))
                    .flatten();
                self.kinds
                    .entry((name.clone(), kind.clone()))
                    .or_insert_with(|| (r.resource.clone(), scope));
                entry
                    .resources
                    .entry(v.version.clone())
                    .or_default()
                    .insert(
                        r.resource,
                        RawResource {
                            kind,
                            scope,
                            verbs: r.verbs,
                            subresources: r
                                .subresources
                                .into_iter()
                                .map(|s| s.subresource)
                                .collect(),
                            builtin,
                            made: OnceLock::new(),
                        },
                    );
            }
        }
    }

    /// Sets the policy of a non-tenant upstream group's resource (e.g. share a platform CRD
    /// read-only). Tenant CRD groups cannot be overridden.
    pub fn set_policy(&mut self, group: &str, resource: &str, policy: Policy) {
        self.overrides
            .insert((group.to_owned(), resource.to_owned()), policy);
    }

    /// Every upstream group name.
    pub fn upstream_groups(&self) -> impl Iterator<Item = &str> {
        self.groups.keys().map(String::as_str)
    }

    /// Upstream versions of an upstream group, preferred first.
    pub fn upstream_versions(&self, upstream_group: &str) -> &[String] {
        self.groups
            .get(upstream_group)
            .map(|g| g.versions.as_slice())
            .unwrap_or(&[])
    }

    /// Does the tenant see this upstream group at all (its own CRD groups, built-in groups,
    /// platform groups; never another tenant's)? Returns the tenant's name for it.
    pub fn tenant_group_view(&self, tenant: &TenantId, upstream_group: &str) -> Option<String> {
        if let Some(g) = tenant.strip(upstream_group) {
            return Some(g.to_owned());
        }
        if looks_tenant_prefixed(upstream_group) {
            return None;
        }
        // A built-in or platform group that a tenant CRD group shadows is not visible.
        if !is_builtin_group(upstream_group)
            && self
                .groups
                .contains_key(&tenant.upstream_name(upstream_group))
        {
            return None;
        }
        Some(upstream_group.to_owned())
    }

    /// The upstream group for a tenant-visible group ("example.com" -> "<tid>-example.com" when
    /// the tenant owns it; built-in groups unchanged).
    pub fn upstream_group(&self, tenant: &TenantId, group: &str) -> Option<String> {
        self.upstream_group_of(tenant, group).map(Cow::into_owned)
    }

    /// [`Self::upstream_group`], borrowing the group where it is unchanged (every built-in
    /// group: the request path's common case).
    fn upstream_group_of<'g>(&self, tenant: &TenantId, group: &'g str) -> Option<Cow<'g, str>> {
        if is_builtin_group(group) {
            return self
                .groups
                .contains_key(group)
                .then_some(Cow::Borrowed(group));
        }
        let owned = tenant.upstream_name(group);
        if self.groups.contains_key(&owned) {
            return Some(Cow::Owned(owned));
        }
        if self.groups.contains_key(group) && !looks_tenant_prefixed(group) {
            return Some(Cow::Borrowed(group));
        }
        None
    }

    /// The upstream group to write for a group a tenant names in a rule (RBAC, webhook rules,
    /// access reviews), whether or not the CRD exists yet: `*` and built-in groups stay,
    /// platform groups the operator opened stay, every other group is the tenant's own CRD
    /// group. This does not depend on creation order (KubeZoo's bug).
    pub fn rule_group_up(&self, tenant: &TenantId, group: &str) -> String {
        if group == "*" || is_builtin_group(group) {
            return group.to_owned();
        }
        let owned = tenant.upstream_name(group);
        if self.groups.contains_key(&owned) {
            return owned;
        }
        let opened = is_open_aggregated_group(group)
            || self
                .overrides
                .iter()
                .any(|((g, _), p)| g == group && *p != Policy::Forbidden);
        if opened { group.to_owned() } else { owned }
    }

    /// Inverse of [`Self::rule_group_up`]: None when the group is another tenant's.
    pub fn rule_group_down(&self, tenant: &TenantId, upstream: &str) -> Option<String> {
        if let Some(g) = tenant.strip(upstream) {
            return Some(g.to_owned());
        }
        if looks_tenant_prefixed(upstream) {
            return None;
        }
        Some(upstream.to_owned())
    }

    /// Is a tenant-view group visible to the tenant at all: built-in groups, the tenant's own
    /// CRD groups, and platform groups with at least one resource the operator opened. Every
    /// other group answers 404 to discovery and OpenAPI requests.
    pub fn group_visible(&self, tenant: &TenantId, group: &str) -> bool {
        let Some(ug) = self.upstream_group(tenant, group) else {
            return false;
        };
        is_builtin_group(&ug)
            || tenant.strip(&ug).is_some()
            || is_open_aggregated_group(&ug)
            || self
                .overrides
                .iter()
                .any(|((g, _), p)| *g == ug && *p != Policy::Forbidden)
    }

    /// Look up by the tenant's view (group un-prefixed). `tenant` decides which CRD groups exist.
    pub fn resolve(
        &self,
        tenant: &TenantId,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<ResourceInfo> {
        self.resolve_shared(tenant, group, version, resource)
            .map(Arc::unwrap_or_clone)
    }

    /// [`Catalog::resolve`], shared rather than copied: what the request path keeps.
    pub fn resolve_shared(
        &self,
        tenant: &TenantId,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceInfo>> {
        let ug = self.upstream_group_of(tenant, group)?;
        self.info(tenant, &ug, version, resource)
    }

    /// Look up by upstream group (as found in upstream objects). None for other tenants' groups.
    pub fn resolve_upstream(
        &self,
        tenant: &TenantId,
        upstream_group: &str,
        version: &str,
        resource: &str,
    ) -> Option<ResourceInfo> {
        self.tenant_group_view(tenant, upstream_group)?;
        self.info(tenant, upstream_group, version, resource)
            .map(Arc::unwrap_or_clone)
    }

    fn info(
        &self,
        tenant: &TenantId,
        ug: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceInfo>> {
        let g = self.groups.get(ug)?;
        let raw = g.resources.get(version)?.get(resource)?;
        let tenant_crd = tenant.strip(ug).is_some();
        let policy = if tenant_crd {
            Policy::TenantOwned
        } else if is_builtin_group(ug) {
            // The row was looked up once, when discovery was read: no lookup per request.
            let policy = raw
                .builtin
                .map_or_else(|| kinds::unlisted_policy(raw.scope), |k| k.policy);
            match policy {
                Policy::SharedReadOnly | Policy::Forbidden
                    if self.is_granted(tenant, ug, resource) =>
                {
                    Policy::PlatformGranted
                }
                p => p,
            }
        } else {
            // Platform CRDs and aggregated APIs: default deny unless the operator opened it or
            // it is one of the aggregated APIs every tenant may read.
            self.overrides
                .get(&(ug.to_owned(), resource.to_owned()))
                .copied()
                .or_else(|| {
                    raw.builtin
                        .filter(|_| is_open_aggregated_group(ug))
                        .map(|k| k.policy)
                })
                .unwrap_or(Policy::Forbidden)
        };
        if let Some(made) = raw.made.get()
            && made.policy == policy
            && made.tenant_crd == tenant_crd
        {
            return Some(made.clone());
        }
        let info = Arc::new(ResourceInfo {
            group: tenant.strip(ug).unwrap_or(ug).to_owned(),
            version: version.to_owned(),
            resource: resource.to_owned(),
            kind: raw.kind.clone(),
            scope: raw.scope,
            policy,
            verbs: raw.verbs.clone(),
            subresources: raw.subresources.clone(),
            tenant_crd,
            upstream_group: ug.to_owned(),
            builtin: raw.builtin.filter(|_| !tenant_crd),
        });
        // The first way a resource resolves is kept (a granted or overridden policy is made
        // anew each time, which is rare).
        let _ = raw.made.set(info.clone());
        Some(info)
    }

    /// The resource for a kind written by a tenant (`apiVersion` in the tenant's view).
    pub fn resolve_kind(
        &self,
        tenant: &TenantId,
        api_version: &str,
        kind: &str,
    ) -> Option<ResourceInfo> {
        let (g, v) = split_api_version(api_version);
        let ug = self.upstream_group(tenant, g)?;
        self.resolve_upstream_kind_in(tenant, &ug, v, kind)
    }

    /// The resource for a kind found upstream (`apiVersion` as upstream writes it).
    pub fn resolve_upstream_kind(
        &self,
        tenant: &TenantId,
        upstream_api_version: &str,
        kind: &str,
    ) -> Option<ResourceInfo> {
        let (g, v) = split_api_version(upstream_api_version);
        self.tenant_group_view(tenant, g)?;
        self.resolve_upstream_kind_in(tenant, g, v, kind)
    }

    fn resolve_upstream_kind_in(
        &self,
        tenant: &TenantId,
        ug: &str,
        version: &str,
        kind: &str,
    ) -> Option<ResourceInfo> {
        let (resource, _) = self.kinds.get(&(ug.to_owned(), kind.to_owned()))?;
        self.info(tenant, ug, version, resource)
            .map(Arc::unwrap_or_clone)
            .or_else(|| {
                // The kind exists in another version of the group: scope and policy do not
                // depend on the version, so use the preferred one.
                let g = self.groups.get(ug)?;
                g.versions
                    .iter()
                    .find_map(|v| self.info(tenant, ug, v, resource).map(Arc::unwrap_or_clone))
                    .map(|mut i| {
                        i.version = version.to_owned();
                        i
                    })
            })
    }

    /// Look up a resource by tenant-view group and resource name in whichever version upstream
    /// serves it (RBAC and webhook rules name no version).
    pub fn resolve_any_version(
        &self,
        tenant: &TenantId,
        group: &str,
        resource: &str,
    ) -> Option<ResourceInfo> {
        let ug = self.upstream_group(tenant, group)?;
        let g = self.groups.get(&ug)?;
        g.versions.iter().find_map(|v| {
            self.info(tenant, &ug, v, resource)
                .map(Arc::unwrap_or_clone)
        })
    }

    /// Like [`Self::resolve_any_version`] with an upstream group name.
    pub fn resolve_upstream_any_version(
        &self,
        tenant: &TenantId,
        upstream_group: &str,
        resource: &str,
    ) -> Option<ResourceInfo> {
        self.tenant_group_view(tenant, upstream_group)?;
        let g = self.groups.get(upstream_group)?;
        g.versions.iter().find_map(|v| {
            self.info(tenant, upstream_group, v, resource)
                .map(Arc::unwrap_or_clone)
        })
    }

    /// Every (upstream group, version, resource) known, for discovery filtering.
    pub fn all_upstream(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.groups.iter().flat_map(|(g, rg)| {
            rg.resources.iter().flat_map(move |(v, rs)| {
                rs.keys().map(move |r| (g.as_str(), v.as_str(), r.as_str()))
            })
        })
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
pub(crate) mod tests;
