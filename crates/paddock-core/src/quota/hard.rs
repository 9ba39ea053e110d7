//! A tenant quota's limits as the admin writes them: resource names (`names.rs`) with
//! Kubernetes quantities, checked before they are stored, and the kinds a recount must watch
//! to know their usage.

use std::collections::{BTreeMap, BTreeSet};

use super::names::{PLAIN_NAMES, is_extended_limit, is_known_resource};
use super::quantity::{Milli, QuantityError};

/// Name of the one quota object a tenant sees (`kubectl get tenantquotas`) and that refusals
/// name (`exceeded quota: tenant-quota, ...`).
pub const QUOTA_NAME: &str = "tenant-quota";

/// Hard limits by resource name.
pub type Hard = BTreeMap<String, Milli>;

/// An unknown resource name or a bad quantity in a quota.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaSpecError {
    #[error("spec.hard[{0}]: {1}")]
    Quantity(String, QuantityError),
    #[error("spec.hard[{0}]: must be zero or more")]
    Negative(String),
    #[error(
        "spec.hard[{0}]: not a resource a tenant quota can limit (namespaces, pods, services, services.nodeports, services.loadbalancers, persistentvolumeclaims, requests.storage, <class>.storageclass.storage.k8s.io/requests.storage|persistentvolumeclaims, requests.<r>, limits.<r>, cpu, memory, ephemeral-storage, configmaps, secrets, count/<resource>[.<group>])"
    )]
    UnknownResource(String),
    #[error(
        "spec.hard[{0}]: extended resources are limited by requests.<name> only, as in a ResourceQuota (the apiserver accepts limits.<name> and <name> there but never charges them: a pod's requests of an extended resource equal its limits)"
    )]
    ExtendedLimit(String),
    #[error("spec.scoped[{0}]: {1}")]
    Scoped(String, String),
}

/// Parses and checks the hard limits an admin wrote.
pub fn parse_hard(hard: &BTreeMap<String, String>) -> Result<Hard, QuotaSpecError> {
    let mut out = Hard::new();
    for (name, q) in hard {
        if !is_known_resource(name) {
            return Err(if is_extended_limit(name) {
                QuotaSpecError::ExtendedLimit(name.clone())
            } else {
                QuotaSpecError::UnknownResource(name.clone())
            });
        }
        out.insert(name.clone(), parse_quantity(name, q)?);
    }
    Ok(out)
}

/// A limit's quantity: a Kubernetes quantity, zero or more.
pub(super) fn parse_quantity(name: &str, q: &str) -> Result<Milli, QuotaSpecError> {
    let m = Milli::parse(q).map_err(|e| QuotaSpecError::Quantity(name.to_string(), e))?;
    if m.0 < 0 {
        return Err(QuotaSpecError::Negative(name.to_string()));
    }
    Ok(m)
}

/// Which kinds (group, resource; tenant view) a recount must list to know the usage of the
/// limited resources.
pub fn tracked_kinds(hard: &Hard) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for name in hard.keys() {
        let kind: Option<(&str, String)> = if let Some(r) = name.strip_prefix("count/") {
            Some(match r.split_once('.') {
                Some((res, group)) => (group, res.to_string()),
                None => ("", r.to_string()),
            })
        } else if name == "pods"
            || name.starts_with("hugepages-")
            || name.starts_with("requests.") && name != "requests.storage"
            || name.starts_with("limits.")
            || matches!(name.as_str(), "cpu" | "memory" | "ephemeral-storage")
        {
            Some(("", "pods".into()))
        } else if name.starts_with("services") {
            Some(("", "services".into()))
        } else if name == "persistentvolumeclaims"
            || name == "requests.storage"
            || name.contains(".storageclass.storage.k8s.io/")
        {
            Some(("", "persistentvolumeclaims".into()))
        } else {
            PLAIN_NAMES
                .contains(&name.as_str())
                .then(|| ("", name.clone()))
        };
        if let Some((g, r)) = kind {
            out.insert((g.to_string(), r));
        }
    }
    out
}
