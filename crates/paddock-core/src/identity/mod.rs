//! Identities: how a tenant user is impersonated upstream, and how users and groups written in
//! RBAC subjects and access reviews move in and out of the tenant.

pub mod headers;
pub mod impersonate;
pub mod names;
pub mod oidc;
pub mod review;

use crate::error::TranslateError;
use std::sync::Arc;

use crate::tenant::{NameKind, TenantId, check_prefixed_len};

const SA_GROUP: &str = "system:serviceaccounts:";
/// Every upstream user of tenant `<tid>` carries `paddock:tenant:<tid>`; only paddock asserts it.
pub const TENANT_GROUP_PREFIX: &str = "paddock:tenant:";
/// Every upstream user of every tenant carries this group too; only paddock asserts it. It
/// grants nothing: it is what the `paddock-tenants` FlowSchema matches, so that tenants' requests
/// get API Priority and Fairness seats of their own instead of queueing in `global-default`
/// with every other user (docs/performance.md). It is not `paddock:tenant:<tid>`-shaped, so
/// the admission guard's tenant test never sees it.
pub const ALL_TENANTS_GROUP: &str = "paddock:tenants";
/// In-tenant group of the tenant's administrators (cluster-admin of the tenant's cluster).
pub const TENANT_ADMIN_GROUP: &str = "tenant-admins";

/// Is a caller with these (tenant-view) groups one of the tenant's admins? They get a cluster
/// admin's answers everywhere; anyone else gets each user's own view of lists
/// (`response::views`).
pub fn is_tenant_admin(groups: &[String]) -> bool {
    groups.iter().any(|g| g == TENANT_ADMIN_GROUP)
}
/// The group every tenant admin's *shadow* identity carries besides its own shadow groups: the
/// subject of the one binding of the shared cluster-scope role (paddock-server `provision`).
pub const CLUSTER_SCOPE_GROUP: &str = "paddock:tenant-cluster-scope-admins";

/// Subjects of a tenant's ClusterRoleBindings are stored upstream in this inert "cluster shadow"
/// form, `paddock:cluster:<tid>:<upstream identity>`, which no real caller carries: a tenant
/// ClusterRoleBinding therefore grants nothing cluster-wide upstream. paddock asserts the shadow
/// identity only on requests for cluster-scoped objects (whose names it prefixes and whose
/// lists it label-filters), and mirrors each tenant ClusterRoleBinding into a RoleBinding in
/// every namespace of the tenant for the namespaced part.
pub const CLUSTER_SHADOW_PREFIX: &str = "paddock:cluster:";

/// `paddock:cluster:<tid>:<upstream>`.
pub fn cluster_shadow(t: &TenantId, upstream: &str) -> String {
    format!("{CLUSTER_SHADOW_PREFIX}{}:{upstream}", t.as_str())
}

/// Inverse of [`cluster_shadow`]; None when `s` is not a shadow identity of tenant `t`.
pub fn cluster_unshadow<'a>(t: &TenantId, s: &'a str) -> Option<&'a str> {
    let rest = s
        .strip_prefix(CLUSTER_SHADOW_PREFIX)?
        .strip_prefix(t.as_str())?
        .strip_prefix(':')?;
    if rest.is_empty() { None } else { Some(rest) }
}

/// An authenticated caller of paddock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// None for platform admins.
    pub tenant: Option<TenantId>,
    pub user: String,
    pub groups: Vec<String>,
}

/// What paddock asserts upstream with `Impersonate-User`, `Impersonate-Group` and
/// `Impersonate-Extra-<key>` (or their front-proxy forms, `headers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Impersonation {
    pub user: String,
    pub groups: Vec<String>,
    /// Empty for every tenant identity since issue 37: paddock sent `paddock.io/tenant=<tid>`,
    /// which no RBAC rule can read and no policy paddock installs reads, and which cost the
    /// apiserver one more impersonation check per request (docs/performance.md "Upstream
    /// identity"); the tenant is named by the user and `paddock:tenant:<tid>` already.
    pub extra: Vec<(String, String)>,
}

/// The group kube-apiserver adds by itself to every impersonated user but `system:anonymous`
/// when the `Impersonate-Group` values name neither it nor `system:unauthenticated`
/// (k8s.io/apiserver `filters/impersonation.go`). paddock's identities carry it, and it is not
/// sent: the apiserver authorizes every `Impersonate-Group` value on its own (an RBAC walk over
/// every ClusterRoleBinding for a least-privilege gateway), so sending it costs one check per
/// request and changes nothing (docs/performance.md).
pub const IMPLIED_GROUP: &str = "system:authenticated";

impl Impersonation {
    /// The groups sent as `Impersonate-Group`: all but [`IMPLIED_GROUP`], which the apiserver
    /// adds. The identity upstream is `groups`, as a review body names it.
    pub fn sent_groups(&self) -> impl Iterator<Item = &str> {
        self.groups
            .iter()
            .map(String::as_str)
            .filter(|g| *g != IMPLIED_GROUP)
    }
}

/// The group only paddock asserts for tenant `t`.
pub fn tenant_group(t: &TenantId) -> String {
    format!("{TENANT_GROUP_PREFIX}{}", t.as_str())
}

/// `paddock:<tid>:<user>`, groups `paddock:<tid>:<g>`, plus `paddock:tenant:<tid>`,
/// `paddock:tenants` and `system:authenticated`; no extra ([`Impersonation::extra`]).
///
/// The user and groups come from a certificate paddock's own CA signed, so they are prefixed
/// as they are: even a certificate group `system:masters` becomes the harmless
/// `paddock:<tid>:system:masters`.
pub fn impersonation_for(tenant: &TenantId, user: &str, groups: &[String]) -> Impersonation {
    let mut gs: Vec<String> = groups.iter().map(|g| tenant_ident(tenant, g)).collect();
    gs.push(tenant_group(tenant));
    gs.push(ALL_TENANTS_GROUP.to_owned());
    gs.push("system:authenticated".to_owned());
    Impersonation {
        user: tenant_ident(tenant, user),
        groups: gs,
        extra: Vec::new(),
    }
}

fn tenant_ident(t: &TenantId, s: &str) -> String {
    format!("paddock:{}:{}", t.as_str(), s)
}

fn strip_tenant_ident<'a>(t: &TenantId, s: &'a str) -> Option<&'a str> {
    let rest = s
        .strip_prefix("paddock:")?
        .strip_prefix(t.as_str())?
        .strip_prefix(':')?;
    if rest.is_empty() { None } else { Some(rest) }
}

fn check_namespace_segment(ns: &str, what: &str) -> Result<(), TranslateError> {
    if ns.is_empty() || ns.contains(':') || !crate::identity::names::is_dns_label(ns) {
        return Err(TranslateError::invalid(format!(
            "{what}: {ns:?} is not a valid namespace"
        )));
    }
    check_prefixed_len(NameKind::Namespace, ns)
}

/// A user name a tenant writes (RBAC `User` subject, SAR `spec.user`) -> upstream.
/// `system:serviceaccount:<ns>:<sa>` maps through its namespace; any other `system:` user and
/// any `paddock:` identity is refused, since neither can mean something inside the tenant.
pub fn map_user_up(t: &TenantId, user: &str) -> Result<String, TranslateError> {
    if user.is_empty() {
        return Err(TranslateError::invalid("user name must not be empty"));
    }
    if let Some(rest) = user.strip_prefix(SA_USER) {
        let (ns, sa) = rest.split_once(':').ok_or_else(|| {
            TranslateError::invalid(format!(
                "user {user:?}: expected system:serviceaccount:<namespace>:<name>"
            ))
        })?;
        check_namespace_segment(ns, user)?;
        if sa.is_empty() || sa.contains(':') {
            return Err(TranslateError::invalid(format!(
                "user {user:?}: expected system:serviceaccount:<namespace>:<name>"
            )));
        }
        return Ok(format!("{SA_USER}{}:{sa}", t.upstream_name(ns)));
    }
    if user.starts_with("system:") || user.starts_with("paddock:") {
        return Err(TranslateError::forbidden(format!(
            "user {user:?} cannot be used in this cluster: system and paddock identities are reserved"
        )));
    }
    Ok(tenant_ident(t, user))
}

/// A group a tenant writes -> upstream. `system:serviceaccounts:<ns>` maps through its
/// namespace; `system:masters`, `system:authenticated`, `system:unauthenticated`, bare
/// `system:serviceaccounts`, every other `system:` group and every `paddock:` group are refused.
pub fn map_group_up(t: &TenantId, group: &str) -> Result<String, TranslateError> {
    if group.is_empty() {
        return Err(TranslateError::invalid("group name must not be empty"));
    }
    if let Some(ns) = group.strip_prefix(SA_GROUP) {
        check_namespace_segment(ns, group)?;
        return Ok(format!("{SA_GROUP}{}", t.upstream_name(ns)));
    }
    if group.starts_with("system:") || group.starts_with("paddock:") {
        return Err(TranslateError::forbidden(format!(
            "group {group:?} cannot be used in this cluster: it has cluster-wide meaning or is reserved"
        )));
    }
    Ok(tenant_ident(t, group))
}

/// Upstream user -> the tenant's name for it; None when the user is not the tenant's.
pub fn map_user_down(t: &TenantId, upstream: &str) -> Option<String> {
    if let Some(rest) = upstream.strip_prefix(SA_USER) {
        let (ns, sa) = rest.split_once(':')?;
        let ns = t.strip(ns)?;
        return Some(format!("{SA_USER}{ns}:{sa}"));
    }
    strip_tenant_ident(t, upstream).map(str::to_owned)
}

/// Upstream group -> the tenant's name for it; None when the group is not one a tenant could
/// have written (including `paddock:tenant:<tid>` and `system:authenticated`).
pub fn map_group_down(t: &TenantId, upstream: &str) -> Option<String> {
    if let Some(ns) = upstream.strip_prefix(SA_GROUP) {
        let ns = t.strip(ns)?;
        return Some(format!("{SA_GROUP}{ns}"));
    }
    strip_tenant_ident(t, upstream).map(str::to_owned)
}

/// Groups in a user's *effective* identity (SelfSubjectReview, TokenReview status): like
/// [`map_group_down`], but the universal groups every caller really has are shown as they are.
pub fn map_user_info_group_down(t: &TenantId, upstream: &str) -> Option<String> {
    match upstream {
        "system:authenticated" | "system:serviceaccounts" => Some(upstream.to_owned()),
        _ => map_group_down(t, upstream),
    }
}

/// The tenant admins' group upstream (real identity).
pub fn upstream_admin_group(t: &TenantId) -> String {
    format!("paddock:{}:{}", t.as_str(), TENANT_ADMIN_GROUP)
}

/// The tenant admins' shadow group (asserted only for cluster-scoped requests).
pub fn shadow_admin_group(t: &TenantId) -> String {
    cluster_shadow(t, &upstream_admin_group(t))
}

/// Prefix of a service account's user name.
pub const SA_USER: &str = "system:serviceaccount:";

/// The groups of a tenant identity's cluster shadow, from its real (upstream) groups: the
/// groups every tenant identity carries (`paddock:tenant:<tid>`, `paddock:tenants`,
/// `system:authenticated`) stay as they are, every other becomes its shadow, and an admin's
/// shadow also carries [`CLUSTER_SCOPE_GROUP`]. The one mapping behind the shadow identity of
/// requests ([`impersonation`]) and of subject access reviews (`review::shadow_subject_review`).
pub fn shadow_groups(t: &TenantId, real_groups: &[String]) -> Vec<String> {
    let keep = [
        tenant_group(t),
        ALL_TENANTS_GROUP.to_owned(),
        "system:authenticated".to_owned(),
    ];
    let mut groups: Vec<String> = real_groups
        .iter()
        .map(|g| {
            if keep.contains(g) {
                g.clone()
            } else {
                cluster_shadow(t, g)
            }
        })
        .collect();
    if real_groups.contains(&upstream_admin_group(t)) {
        groups.push(CLUSTER_SCOPE_GROUP.to_owned());
    }
    groups
}

/// Which upstream identity a request is sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum As {
    /// The real identity (namespaced requests, discovery, reviews).
    Real,
    /// The cluster shadow identity (cluster-scoped objects).
    Shadow,
}

/// The upstream identity of a tenant caller. `user` is a certificate CN (never contains ':')
/// or, for a tenant pod, `system:serviceaccount:<ns>:<sa>` in the tenant's view.
pub fn impersonation(t: &TenantId, user: &str, groups: &[String], who: As) -> Impersonation {
    let real = if let Some((ns, sa)) = user.strip_prefix(SA_USER).and_then(|r| r.split_once(':')) {
        let up_ns = t.upstream_name(ns);
        Impersonation {
            user: format!("{SA_USER}{up_ns}:{sa}"),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{up_ns}"),
                tenant_group(t),
                ALL_TENANTS_GROUP.to_owned(),
                "system:authenticated".to_owned(),
            ],
            extra: Vec::new(),
        }
    } else {
        impersonation_for(t, user, groups)
    };
    match who {
        As::Real => real,
        As::Shadow => Impersonation {
            user: cluster_shadow(t, &real.user),
            groups: shadow_groups(t, &real.groups),
            extra: real.extra,
        },
    }
}

/// The authenticated caller of one request.
#[derive(Debug, Clone)]
pub enum Caller {
    /// A platform admin (certificate without a tenant).
    Admin {
        /// Certificate CN.
        user: String,
        /// Certificate serial (hex).
        serial: String,
    },
    /// A tenant user.
    Tenant {
        /// The tenant.
        tenant: TenantId,
        /// Certificate CN (shared: every request of a connection hands it on).
        user: Arc<str>,
        /// Certificate O values.
        groups: Arc<[String]>,
        /// Certificate serial (hex); [`SERVICE_ACCOUNT_SERIAL`] or [`OIDC_SERIAL_PREFIX`]
        /// and the token's `sub` for callers that signed in with a token.
        serial: String,
    },
}

/// What a tenant caller's `serial` holds when it signed in with a pod's service-account
/// token (there is no certificate).
pub const SERVICE_ACCOUNT_SERIAL: &str = "serviceaccount-token";
/// The prefix of a tenant caller's `serial` when it signed in with an OIDC token; the token's
/// `sub` follows.
pub const OIDC_SERIAL_PREFIX: &str = "oidc:";

/// How a tenant caller signed in (for `paddock user list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignIn {
    /// A client certificate paddock issued.
    Certificate,
    /// An OIDC token of an issuer the tenant trusts.
    Oidc,
    /// A tenant pod's service-account token.
    ServiceAccount,
}

impl SignIn {
    /// Its name in records and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            SignIn::Certificate => "certificate",
            SignIn::Oidc => "oidc",
            SignIn::ServiceAccount => "serviceaccount",
        }
    }

    /// How a caller with this `serial` signed in; `None` for an empty serial: paddock acting
    /// in a tenant itself (a tenant's export, import or move), which no credential names.
    pub fn of_serial(serial: &str) -> Option<SignIn> {
        if serial.is_empty() {
            None
        } else if serial == SERVICE_ACCOUNT_SERIAL {
            Some(SignIn::ServiceAccount)
        } else if serial.starts_with(OIDC_SERIAL_PREFIX) {
            Some(SignIn::Oidc)
        } else {
            Some(SignIn::Certificate)
        }
    }
}

impl Caller {
    /// For logs and metrics.
    pub fn tenant_label(&self) -> &str {
        match self {
            Caller::Admin { .. } => "_admin",
            Caller::Tenant { tenant, .. } => tenant.as_str(),
        }
    }
    /// User name for logs.
    pub fn user(&self) -> &str {
        match self {
            Caller::Admin { user, .. } => user,
            Caller::Tenant { user, .. } => user,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> TenantId {
        TenantId::parse("foofoo").unwrap()
    }

    #[test]
    fn impersonation_maps_user_groups_and_extra() {
        let i = impersonation_for(&t(), "alice", &["dev".into(), "system:masters".into()]);
        assert_eq!(i.user, "paddock:foofoo:alice");
        assert_eq!(
            i.groups,
            vec![
                "paddock:foofoo:dev",
                "paddock:foofoo:system:masters",
                "paddock:tenant:foofoo",
                "paddock:tenants",
                "system:authenticated"
            ]
        );
        assert!(i.extra.is_empty(), "{:?}", i.extra);
        // Sent without the group the apiserver adds; the identity keeps it.
        assert_eq!(
            i.sent_groups().collect::<Vec<_>>(),
            vec![
                "paddock:foofoo:dev",
                "paddock:foofoo:system:masters",
                "paddock:tenant:foofoo",
                "paddock:tenants"
            ]
        );
        for who in [As::Real, As::Shadow] {
            let sa = impersonation(&t(), "system:serviceaccount:web:ci", &[], who);
            assert!(sa.groups.iter().any(|g| g == IMPLIED_GROUP));
            assert!(sa.sent_groups().all(|g| g != IMPLIED_GROUP));
            // A service account's own groups are sent: the apiserver adds them only when no
            // group is given.
            if who == As::Real {
                assert!(sa.sent_groups().any(|g| g == "system:serviceaccounts"));
            }
        }
    }

    #[test]
    fn user_up_and_down() {
        let t = t();
        assert_eq!(map_user_up(&t, "alice").unwrap(), "paddock:foofoo:alice");
        assert_eq!(
            map_user_up(&t, "system:serviceaccount:default:builder").unwrap(),
            "system:serviceaccount:foofoo-default:builder"
        );
        for bad in [
            "system:admin",
            "system:kube-scheduler",
            "paddock:barbar:alice",
            "paddock:foofoo:alice",
            "system:serviceaccount:default",
            "system:serviceaccount::x",
            "",
        ] {
            assert!(map_user_up(&t, bad).is_err(), "{bad}");
        }
        assert_eq!(
            map_user_down(&t, "paddock:foofoo:alice").as_deref(),
            Some("alice")
        );
        assert_eq!(
            map_user_down(&t, "system:serviceaccount:foofoo-default:builder").as_deref(),
            Some("system:serviceaccount:default:builder")
        );
        assert_eq!(map_user_down(&t, "paddock:barbar:alice"), None);
        assert_eq!(
            map_user_down(&t, "system:serviceaccount:barbar-default:x"),
            None
        );
        assert_eq!(map_user_down(&t, "system:admin"), None);
        assert_eq!(map_user_down(&t, "alice"), None);
    }

    #[test]
    fn group_up_and_down() {
        let t = t();
        assert_eq!(map_group_up(&t, "dev").unwrap(), "paddock:foofoo:dev");
        assert_eq!(
            map_group_up(&t, "system:serviceaccounts:ci").unwrap(),
            "system:serviceaccounts:foofoo-ci"
        );
        for bad in [
            "system:masters",
            "system:authenticated",
            "system:unauthenticated",
            "system:serviceaccounts",
            "system:nodes",
            "paddock:tenant:foofoo",
            "paddock:tenants",
            "paddock:barbar:dev",
            "system:serviceaccounts:Bad",
        ] {
            let e = map_group_up(&t, bad).unwrap_err();
            assert!(matches!(e.http_code(), 403 | 422), "{bad}");
        }
        assert_eq!(
            map_group_down(&t, "paddock:foofoo:dev").as_deref(),
            Some("dev")
        );
        assert_eq!(
            map_group_down(&t, "system:serviceaccounts:foofoo-ci").as_deref(),
            Some("system:serviceaccounts:ci")
        );
        assert_eq!(map_group_down(&t, "paddock:tenant:foofoo"), None);
        assert_eq!(map_group_down(&t, "paddock:tenants"), None);
        assert_eq!(map_user_info_group_down(&t, "paddock:tenants"), None);
        assert_eq!(map_group_down(&t, "system:authenticated"), None);
        assert_eq!(
            map_user_info_group_down(&t, "system:authenticated").as_deref(),
            Some("system:authenticated")
        );
        assert_eq!(map_group_down(&t, "paddock:barbar:dev"), None);
    }

    #[test]
    fn sa_namespace_length_is_checked() {
        let long = "a".repeat(57);
        assert!(map_user_up(&t(), &format!("system:serviceaccount:{long}:x")).is_err());
        assert!(map_group_up(&t(), &format!("system:serviceaccounts:{long}")).is_err());
    }
}

#[cfg(test)]
mod upstream_identity_tests {
    use super::*;

    fn t() -> TenantId {
        TenantId::parse("foofoo").unwrap()
    }

    #[test]
    fn shadow_identity_is_never_a_real_one() {
        let real = impersonation(&t(), "alice", &["dev".into()], As::Real);
        let sh = impersonation(&t(), "alice", &["dev".into()], As::Shadow);
        assert_eq!(real.user, "paddock:foofoo:alice");
        assert_eq!(sh.user, "paddock:cluster:foofoo:paddock:foofoo:alice");
        assert!(
            sh.groups
                .contains(&"paddock:cluster:foofoo:paddock:foofoo:dev".to_owned())
        );
        assert!(sh.groups.contains(&"paddock:tenant:foofoo".to_owned()));
        assert!(!sh.groups.contains(&"paddock:foofoo:dev".to_owned()));
        // Only an admin's shadow carries the shared cluster-scope group; never a real identity.
        assert!(!sh.groups.contains(&CLUSTER_SCOPE_GROUP.to_owned()));
        let admin = impersonation(&t(), "root", &["tenant-admins".into()], As::Shadow);
        assert!(admin.groups.contains(&CLUSTER_SCOPE_GROUP.to_owned()));
        assert!(
            admin
                .groups
                .contains(&"paddock:cluster:foofoo:paddock:foofoo:tenant-admins".to_owned())
        );
        let admin_real = impersonation(&t(), "root", &["tenant-admins".into()], As::Real);
        assert!(!admin_real.groups.contains(&CLUSTER_SCOPE_GROUP.to_owned()));
        let sa = impersonation(&t(), "system:serviceaccount:ci:builder", &[], As::Real);
        assert_eq!(sa.user, "system:serviceaccount:foofoo-ci:builder");
        assert!(
            sa.groups
                .contains(&"system:serviceaccounts:foofoo-ci".to_owned())
        );
        assert!(sa.groups.contains(&"paddock:tenant:foofoo".to_owned()));
    }
}
