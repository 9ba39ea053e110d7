//! The resource names a tenant quota can limit, as a ResourceQuota's (k8s.io/kubernetes
//! pkg/apis/core/helper: `IsStandardQuotaResourceName`, `IsExtendedResourceName`,
//! `IsNativeResource`), and the pod names a scoped entry can limit (the pod evaluator's
//! `MatchingResources`). Default deny: a name paddock would never charge is refused, where
//! the apiserver accepts some in a ResourceQuota and never charges them (docs/quota.md).

/// Names without a prefix or a `/`.
pub(super) const PLAIN_NAMES: &[&str] = &[
    "namespaces",
    "pods",
    "services",
    "services.nodeports",
    "services.loadbalancers",
    "persistentvolumeclaims",
    "requests.storage",
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
    "cpu",
    "memory",
    "ephemeral-storage",
];

/// The pod evaluator's own names (`podResources`).
const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
];

/// `IsStandardQuotaResourceName`'s fixed set (hugepages names are standard too).
const STANDARD_QUOTA: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

pub(super) fn is_dns_label_ish(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// A DNS-1123 subdomain: lower-case alphanumerics, `-` and `.`, starting and ending
/// alphanumeric, at most 253 characters.
fn is_dns_subdomain(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && alnum(b[0])
                && alnum(b[b.len() - 1])
                && b.iter().all(|c| alnum(*c) || *c == b'-')
        })
}

/// A DNS-1123 label (a scoped entry's name): at most 63 characters.
pub fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && !s.contains('.') && is_dns_subdomain(s)
}

/// `IsQualifiedName`: `[prefix/]name`, the prefix a DNS subdomain, the name at most 63
/// characters of alphanumerics, `-`, `_` and `.`, starting and ending alphanumeric.
fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    let b = name.as_bytes();
    prefix.is_none_or(is_dns_subdomain)
        && !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `IsExtendedResourceName`: a name a pod may request outside the `kubernetes.io` domain
/// (`nvidia.com/gpu`), not itself starting with `requests.`, whose quota name
/// `requests.<name>` is a qualified name.
pub fn is_extended_resource(name: &str) -> bool {
    name.contains('/')
        && !name.contains("kubernetes.io/")
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}"))
}

/// Whether `name` is a resource a tenant quota can limit.
pub fn is_known_resource(name: &str) -> bool {
    if PLAIN_NAMES.contains(&name) || is_hugepages(name) {
        return true;
    }
    if let Some(r) = name.strip_prefix("requests.") {
        return matches!(r, "cpu" | "memory" | "ephemeral-storage")
            || r.starts_with("hugepages-")
            || is_extended_resource(r);
    }
    if let Some(r) = name.strip_prefix("limits.") {
        return matches!(r, "cpu" | "memory" | "ephemeral-storage");
    }
    if let Some(r) = name.strip_prefix("count/") {
        return is_dns_label_ish(r);
    }
    if let Some((class, what)) = name.split_once(".storageclass.storage.k8s.io/") {
        return is_dns_label_ish(class)
            && matches!(what, "requests.storage" | "persistentvolumeclaims");
    }
    false
}

/// `limits.<extended>` or a bare `<extended>`: the apiserver accepts these in a
/// ResourceQuota but never charges them (extended resources are not overcommitted, so a
/// pod's requests equal its limits and only `requests.<name>` is counted).
pub fn is_extended_limit(name: &str) -> bool {
    name.strip_prefix("limits.")
        .is_some_and(is_extended_resource)
        || is_extended_resource(name)
}

/// A bare hugepages name (`hugepages-2Mi`), charged as requests.
fn is_hugepages(name: &str) -> bool {
    name.strip_prefix("hugepages-")
        .is_some_and(|size| !size.is_empty())
}

/// `IsStandardQuotaResourceName`.
pub fn is_standard_quota_resource(name: &str) -> bool {
    STANDARD_QUOTA.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// Whether a pod charges `name` (the pod evaluator's `MatchingResources`): what a scoped
/// entry can limit.
pub fn is_pod_resource(name: &str) -> bool {
    POD_RESOURCES.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
        || name
            .strip_prefix("requests.")
            .is_some_and(is_extended_resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_resources_follow_the_apiserver() {
        assert!(is_extended_resource("nvidia.com/gpu"));
        assert!(is_extended_resource("example.com/foo_bar.v2"));
        assert!(!is_extended_resource("cpu"));
        assert!(!is_extended_resource("kubernetes.io/foo"));
        assert!(!is_extended_resource("node.kubernetes.io/foo"));
        assert!(!is_extended_resource("requests.example.com/foo"));
        assert!(!is_extended_resource("Example.com/foo"));
        assert!(!is_extended_resource("example.com/"));
        assert!(!is_extended_resource("example.com/a/b"));
        assert!(!is_extended_resource(&format!(
            "example.com/{}",
            "x".repeat(64)
        )));
    }

    #[test]
    fn known_names() {
        for ok in [
            "requests.nvidia.com/gpu",
            "requests.hugepages-2Mi",
            "hugepages-1Gi",
            "limits.ephemeral-storage",
            "count/widgets.example.com",
            "gold.storageclass.storage.k8s.io/requests.storage",
        ] {
            assert!(is_known_resource(ok), "{ok}");
        }
        for no in [
            "limits.nvidia.com/gpu",
            "nvidia.com/gpu",
            "limits.hugepages-2Mi",
            "requests.kubernetes.io/foo",
            "nodes",
            "count/",
        ] {
            assert!(!is_known_resource(no), "{no}");
        }
        assert!(is_extended_limit("limits.nvidia.com/gpu"));
        assert!(is_extended_limit("nvidia.com/gpu"));
        assert!(!is_extended_limit("limits.cpu"));
    }

    #[test]
    fn pod_names() {
        for ok in [
            "pods",
            "count/pods",
            "requests.cpu",
            "limits.memory",
            "requests.nvidia.com/gpu",
            "hugepages-2Mi",
        ] {
            assert!(is_pod_resource(ok), "{ok}");
        }
        for no in [
            "count/configmaps",
            "services",
            "requests.storage",
            "namespaces",
        ] {
            assert!(!is_pod_resource(no), "{no}");
        }
        assert!(is_dns_label("gpu-1"));
        assert!(!is_dns_label("gpu.1") && !is_dns_label("-a") && !is_dns_label(""));
    }
}
