//! Names in the tenant's view and upstream: cluster-scoped names, CRD groups, referenced kinds.

use crate::catalog::context::TenantContext;
use crate::catalog::{ResourceInfo, split_api_version};
use crate::error::TranslateError;
use crate::tenant::{NameKind, TenantId, check_prefixed_len};

/// A cluster-scoped name the tenant wrote -> upstream. CRDs: `<plural>.<g>` ->
/// `<plural>.<tid>-<g>`; every other prefixed kind: `<tid>-<name>`.
pub fn name_up(t: &TenantId, info: &ResourceInfo, name: &str) -> Result<String, TranslateError> {
    if info.is_crd() {
        let (plural, group) = name.split_once('.').ok_or_else(|| {
            TranslateError::invalid(format!(
                "custom resource definition name {name:?} must be <plural>.<group>"
            ))
        })?;
        check_crd_group(group)?;
        check_prefixed_len(NameKind::DnsSubdomain, name)?;
        return Ok(format!("{plural}.{}", t.upstream_name(group)));
    }
    check_plain_name_up(info, name)?;
    Ok(t.upstream_name(name))
}

/// What [`name_up`] checks of a name that is not a CRD's before it prefixes it: that the
/// prefixed name still fits its kind's limit.
pub fn check_plain_name_up(info: &ResourceInfo, name: &str) -> Result<(), TranslateError> {
    let kind = if info.upstream_group.is_empty() && info.resource == "namespaces" {
        NameKind::Namespace
    } else {
        NameKind::DnsSubdomain
    };
    check_prefixed_len(kind, name)
}

/// Inverse of [`name_up`]; None when the upstream name is not the tenant's.
pub fn name_down(t: &TenantId, info: &ResourceInfo, upstream: &str) -> Option<String> {
    if info.is_crd() {
        let (plural, group) = upstream.split_once('.')?;
        return Some(format!("{plural}.{}", t.strip(group)?));
    }
    t.strip(upstream).map(str::to_owned)
}

/// A tenant may not create a CRD in a built-in group (it would shadow or be shadowed by it).
pub(crate) fn check_crd_group(group: &str) -> Result<(), TranslateError> {
    if group.is_empty() || !group.contains('.') {
        return Err(TranslateError::invalid(format!(
            "custom resource group {group:?} must be a DNS subdomain with at least one dot"
        )));
    }
    if crate::catalog::is_builtin_group(group) {
        return Err(TranslateError::invalid(format!(
            "custom resource group {group:?} is a built-in API group"
        )));
    }
    check_prefixed_len(NameKind::DnsSubdomain, group)
}

/// Resolve a referenced kind (`involvedObject`, ownerReferences, roleRef ...) by apiVersion (if
/// given) and kind, in the tenant's view.
pub(crate) fn resolve_ref_kind(
    ctx: &TenantContext,
    api_version: Option<&str>,
    kind: &str,
) -> Option<ResourceInfo> {
    match api_version {
        Some(av) => ctx.catalog.resolve_kind(&ctx.tenant, av, kind),
        None => ["v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1"]
            .iter()
            .find_map(|av| ctx.catalog.resolve_kind(&ctx.tenant, av, kind)),
    }
}

/// A tenant-written apiVersion -> upstream (tenant CRD groups prefixed; others unchanged).
pub(crate) fn api_version_up(ctx: &TenantContext, av: &str) -> String {
    let (g, v) = split_api_version(av);
    if g.is_empty() || crate::catalog::is_builtin_group(g) {
        return av.to_owned();
    }
    match ctx.catalog.upstream_group(&ctx.tenant, g) {
        Some(ug) => format!("{ug}/{v}"),
        // Unknown group: it can only be one of the tenant's own (perhaps not yet created) CRDs.
        None => format!("{}/{v}", ctx.tenant.upstream_name(g)),
    }
}

/// DNS-1123 label: what namespaces must be.
pub(crate) fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}
