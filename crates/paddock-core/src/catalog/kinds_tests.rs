use super::*;

fn row(group: &str, resource: &str) -> &'static Kind {
    find(group, resource).unwrap_or_else(|| panic!("no row for {resource}.{group}"))
}

#[test]
fn one_row_per_resource() {
    for (i, a) in KINDS.iter().enumerate() {
        assert!(
            !KINDS[i + 1..]
                .iter()
                .any(|b| (a.group, a.resource) == (b.group, b.resource)
                    || (a.group, a.kind) == (b.group, b.kind)),
            "{} has two rows",
            a.qualified()
        );
    }
    assert_eq!(BY_RESOURCE.len(), KINDS.len());
}

#[test]
fn policy_of_listed_and_unlisted_kinds() {
    use Policy::*;
    for (g, r, scope, want) in [
        ("", "namespaces", Scope::Cluster, TenantOwned),
        (
            "rbac.authorization.k8s.io",
            "clusterroles",
            Scope::Cluster,
            TenantOwned,
        ),
        ("", "nodes", Scope::Cluster, SharedReadOnly),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            Scope::Cluster,
            Forbidden,
        ),
        (
            "authentication.k8s.io",
            "tokenreviews",
            Scope::Cluster,
            TenantOwned,
        ),
        // Unlisted: by scope.
        ("", "endpoints", Scope::Namespaced, TenantOwned),
        (
            "resource.k8s.io",
            "deviceclasses",
            Scope::Cluster,
            Forbidden,
        ),
    ] {
        assert_eq!(builtin_policy(g, r, scope), want, "{r}.{g}");
    }
}

/// The row's scope is upstream's (k8s.io/api): a row that said otherwise would make paddock
/// write a namespaced path for a cluster-scoped kind.
#[test]
fn rows_declare_their_upstream_scope() {
    for k in KINDS {
        let owned_cluster = k.scope == Scope::Cluster && k.policy == Policy::TenantOwned;
        if k.deleted_with_tenant || k.replicated || !k.tenant_verbs.is_empty() {
            assert_eq!(k.scope, Scope::Cluster, "{}", k.qualified());
        }
        if k.deleted_with_tenant || k.replicated {
            assert!(owned_cluster && !k.review, "{}", k.qualified());
        }
        if k.splice {
            assert!(
                k.scope == Scope::Namespaced && k.policy == Policy::TenantOwned && !k.review,
                "{}",
                k.qualified()
            );
        }
        if !k.tenant_subresources.is_empty() {
            assert!(k.tenant_verbs.contains(&"update"), "{}", k.qualified());
        }
    }
}

/// Tenant deletion: admission kinds first (they could refuse the rest), namespaces not among
/// them (deleted afterwards from the tenant's namespace list).
#[test]
fn deletion_order() {
    let order: Vec<&str> = deleted_with_tenant().map(|k| k.resource).collect();
    assert_eq!(
        order,
        [
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicies",
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
            "clusterrolebindings",
            "clusterroles",
            "flowschemas",
            "prioritylevelconfigurations",
            "customresourcedefinitions",
            "persistentvolumes",
        ]
    );
}

/// Replication creates what others refer to first.
#[test]
fn replication_order() {
    let order: Vec<&str> = replicated().map(|k| k.resource).collect();
    let at = |r: &str| order.iter().position(|x| *x == r).unwrap();
    assert_eq!(order[0], "customresourcedefinitions");
    assert!(at("clusterroles") < at("clusterrolebindings"));
    assert!(at("prioritylevelconfigurations") < at("flowschemas"));
    assert!(at("validatingadmissionpolicies") < at("validatingadmissionpolicybindings"));
    assert!(!order.contains(&"persistentvolumes") && !order.contains(&"namespaces"));
}

/// paddock's credential may do what the table says paddock does: list what it counts (but
/// secrets, whose `list` grants their data), list and delete what goes with a tenant.
#[test]
fn paddock_rights_cover_what_it_does() {
    for k in KINDS {
        let may = |v: &str| k.paddock_verbs.contains(&v);
        if k.counted != Counted::No {
            assert_eq!(
                may("list"),
                k.resource != "secrets",
                "list {}",
                k.qualified()
            );
        }
        if k.deleted_with_tenant {
            assert!(may("list") && may("delete"), "{}", k.qualified());
        }
        assert_eq!(
            k.paddock_verbs.is_empty(),
            k.paddock_why.is_empty(),
            "{}: rights and their reason go together",
            k.qualified()
        );
    }
    assert!(!row("", "secrets").paddock_verbs.contains(&"list"));
}

#[test]
fn paths_and_names() {
    let pods = row("", "pods");
    assert_eq!(pods.list_path(), "/api/v1/pods");
    assert_eq!(pods.qualified(), "pods");
    assert_eq!(pods.api_version(), "v1");
    let d = row("apps", "deployments");
    assert_eq!(d.list_path(), "/apis/apps/v1/deployments");
    assert_eq!(d.qualified(), "deployments.apps");
    assert_eq!(d.api_version(), "apps/v1");
}

/// The usage figures watch every counted kind (observe::usage_cache): paddock's credential
/// must hold `list` and `watch` on each it is granted anything on; a counted kind with no
/// right at all (secrets) stays uncounted by design.
#[test]
fn counted_kinds_with_rights_are_listed_and_watched() {
    for k in counted().filter(|k| !k.paddock_verbs.is_empty()) {
        for verb in ["list", "watch"] {
            assert!(
                k.paddock_verbs.contains(&verb),
                "{}: paddock needs {verb} for the usage watches",
                k.qualified()
            );
        }
    }
}
