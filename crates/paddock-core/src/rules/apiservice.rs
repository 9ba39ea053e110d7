//! APIServices (`apiregistration.k8s.io/v1`): a shared kind the tenant reads but never writes,
//! whose objects each name an API group, in `spec.group` and in their name
//! `<version>.<group>`. The apiserver makes one for every group it serves: the built-in groups
//! (`v1.`, `v1.apps`), every CRD group (`v1.<tid>-example.com`, the crd-autoregistration
//! controller's) and the platform's aggregated APIs (`v1beta1.metrics.k8s.io`, with a
//! `spec.service`). A tenant sees exactly the groups its discovery shows: built-in groups as
//! they are, its own CRD groups under its names (`v1.example.com`), the platform's groups it
//! may read; another tenant's group and a platform group hidden from it are dropped, so a
//! name in a list, a watch or a Table row never tells one tenant another's group.
//!
//! The rules are the table's row (`rules::table`, `Holds::ServedGroup` and
//! `Holds::ServedGroupName`); this module holds what they do, and the name mapping the request
//! side needs for the same rows (a GET by name, a `metadata.name` field selector, the probe of
//! a refused write).

use std::sync::LazyLock;

use serde_json::Value;

use super::modes::Disposition;
use super::schema::Holds;
use crate::catalog::context::TenantContext;
use crate::catalog::{ResourceInfo, Scope, is_builtin_group};

/// The tenant's view of an upstream API group an APIService serves; None when the tenant does
/// not see the group: another tenant's, a platform group a CRD group of the tenant's shadows,
/// a platform group its discovery hides (`Catalog::group_visible`).
pub(crate) fn group_down(ctx: &TenantContext, upstream: &str) -> Option<String> {
    if let Some(own) = ctx.tenant.strip(upstream) {
        // The tenant's own CRD group: shown even before paddock's catalog has read it (the
        // APIService can come before the next discovery read).
        return Some(own.to_owned());
    }
    if is_builtin_group(upstream) {
        return Some(upstream.to_owned());
    }
    let view = ctx.catalog.tenant_group_view(&ctx.tenant, upstream)?;
    ctx.catalog
        .group_visible(&ctx.tenant, &view)
        .then_some(view)
}

/// The upstream group of a group the tenant names, decided as for RBAC rules
/// (`Catalog::rule_group_up`): built-in and opened platform groups stay, any other group is the
/// tenant's own CRD group, whether or not it exists yet.
pub(crate) fn group_up(ctx: &TenantContext, group: &str) -> String {
    if group.is_empty() {
        return String::new();
    }
    ctx.catalog.rule_group_up(&ctx.tenant, group)
}

/// An APIService's name upstream (`<version>.<group>`) -> the tenant's view; None when the
/// group is not the tenant's to see. `v1.` (the core group) and a name without a group stay.
pub fn name_down(ctx: &TenantContext, upstream: &str) -> Option<String> {
    match upstream.split_once('.') {
        Some((version, group)) if !group.is_empty() => {
            group_down(ctx, group).map(|g| format!("{version}.{g}"))
        }
        _ => Some(upstream.to_owned()),
    }
}

/// An APIService's name as the tenant wrote it -> upstream: its group part as [`group_up`].
pub fn name_up(ctx: &TenantContext, name: &str) -> String {
    match name.split_once('.') {
        Some((version, group)) if !group.is_empty() => {
            format!("{version}.{}", group_up(ctx, group))
        }
        _ => name.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// The walker's rules

/// [`Holds::ServedGroup`] down.
pub(crate) fn served_group_down(ctx: &TenantContext, v: &mut Value) -> Disposition {
    map_down(v, |g| group_down(ctx, g))
}

/// [`Holds::ServedGroupName`] down.
pub(crate) fn served_group_name_down(ctx: &TenantContext, v: &mut Value) -> Disposition {
    map_down(v, |n| name_down(ctx, n))
}

fn map_down(v: &mut Value, f: impl Fn(&str) -> Option<String>) -> Disposition {
    if let Value::String(s) = v {
        match f(s) {
            Some(mapped) => *s = mapped,
            None => return Disposition::Drop,
        }
    }
    Disposition::Keep
}

/// [`Holds::ServedGroup`] and [`Holds::ServedGroupName`] up. A tenant never writes an
/// APIService (the kind is shared read-only: refused before any body is read); the rules are
/// the inverse of the down ones all the same, so that no body could carry the tenant's view
/// upstream.
pub(crate) fn served_up(ctx: &TenantContext, v: &mut Value, holds: Holds) {
    if let Value::String(s) = v {
        *s = if holds == Holds::ServedGroupName {
            name_up(ctx, s)
        } else {
            group_up(ctx, s)
        };
    }
}

// ---------------------------------------------------------------------------------------------
// Names on the request side

/// (upstream group, kind) of the kinds whose `metadata.name` a rule of the table maps
/// ([`Holds::ServedGroupName`]), from the table.
static NAMED_BY_RULE: LazyLock<Vec<(&'static str, &'static str)>> = LazyLock::new(|| {
    super::table::KINDS
        .iter()
        .filter(|row| {
            row.fields.iter().any(|r| {
                r.holds == Holds::ServedGroupName
                    && r.path.iter().map(|s| s.json).eq(["metadata", "name"])
            })
        })
        .map(|row| (row.group, row.kind))
        .collect()
});

/// Are the names of this resource mapped by a rule of the table (APIServices), rather than
/// prefixed (`ResourceInfo::prefixes_name`) or left as they are?
pub fn names_by_rule(info: &ResourceInfo) -> bool {
    info.scope == Scope::Cluster
        && !info.prefixes_name()
        && !info.tenant_crd
        && NAMED_BY_RULE
            .iter()
            .any(|(g, k)| *g == info.upstream_group && *k == info.kind)
}

/// The upstream name of an object the tenant names (in a URL, a field selector), for a
/// resource whose names a rule maps; None for every other resource.
pub fn object_name_up(ctx: &TenantContext, info: &ResourceInfo, name: &str) -> Option<String> {
    names_by_rule(info).then(|| name_up(ctx, name))
}

#[cfg(test)]
#[path = "apiservice_tests.rs"]
mod tests;
