//! `kubectl --as` / `--as-group` inside the tenant: which identity a tenant caller asks to
//! become, mapped into the tenant, and which rights that takes (the server asks them of the
//! tenant's own RBAC, as a cluster's impersonation filter does).
//!
//! The impersonated identity is a tenant identity like any other: it goes upstream as
//! `paddock:<tid>:<user>` (or the tenant's service account), with the groups mapped the same
//! way, so it can never name anything outside the tenant. Names that would mean something
//! outside it (`system:masters`, `system:admin`, `paddock:*`, another tenant's identities) are
//! refused, never passed on; a client's `Impersonate-*` header never reaches upstream.

use crate::error::TranslateError;
use crate::identity::{map_group_up, map_user_up};
use crate::tenant::TenantId;

const SA_USER: &str = "system:serviceaccount:";

/// Whom the caller asked to act as, in the tenant's view (validated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImpersonationRequest {
    pub user: String,
    pub groups: Vec<String>,
}

/// One `impersonate` right the caller needs, in the tenant's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImpersonateRight {
    /// `users`, `groups` or `serviceaccounts`.
    pub resource: &'static str,
    pub name: String,
    /// For `serviceaccounts`: the service account's namespace (tenant view).
    pub namespace: Option<String>,
}

impl ImpersonateRight {
    /// The message of a refusal, as kube-apiserver words it.
    pub fn refusal(&self, caller: &str) -> String {
        let scope = match &self.namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_owned(),
        };
        format!(
            "{} \"{}\" is forbidden: User \"{caller}\" cannot impersonate resource \"{}\" in API group \"\" {scope}",
            self.resource, self.name, self.resource
        )
    }
}

/// The impersonation a request asks for, from its headers (lower-case names); None without
/// any `Impersonate-*` header.
pub fn requested(
    t: &TenantId,
    headers: &[(String, String)],
) -> Result<Option<ImpersonationRequest>, TranslateError> {
    let mut user = None;
    let mut groups = Vec::new();
    let mut any = false;
    for (k, v) in headers {
        let Some(what) = k.strip_prefix("impersonate-") else {
            continue;
        };
        any = true;
        match what {
            "user" => {
                if user.replace(v.clone()).is_some() {
                    return Err(TranslateError::bad("more than one Impersonate-User header"));
                }
            }
            "group" => groups.push(v.clone()),
            _ => {
                return Err(TranslateError::forbidden(format!(
                    "impersonation of {what} (kubectl --as-uid, user extras) is not supported in this cluster; --as and --as-group are"
                )));
            }
        }
    }
    if !any {
        return Ok(None);
    }
    let Some(user) = user.filter(|u| !u.is_empty()) else {
        return Err(TranslateError::bad(
            "impersonating groups requires impersonating a user (kubectl --as)",
        ));
    };
    let refuse = |e: TranslateError| match e {
        TranslateError::Forbidden(m) | TranslateError::Invalid(m) => {
            TranslateError::forbidden(format!("impersonation refused: {m}"))
        }
        e => e,
    };
    map_user_up(t, &user).map_err(refuse)?;
    let sa_ns = user
        .strip_prefix(SA_USER)
        .and_then(|r| r.split_once(':'))
        .map(|(ns, _)| ns.to_owned());
    let mut kept = Vec::new();
    for g in groups {
        // Groups every such identity has anyway: naming them changes nothing.
        let implied = g == "system:authenticated"
            || (sa_ns.is_some()
                && (g == "system:serviceaccounts"
                    || sa_ns
                        .as_deref()
                        .is_some_and(|ns| g == format!("system:serviceaccounts:{ns}"))));
        if implied {
            continue;
        }
        map_group_up(t, &g).map_err(refuse)?;
        if !kept.contains(&g) {
            kept.push(g);
        }
    }
    Ok(Some(ImpersonationRequest { user, groups: kept }))
}

/// The `impersonate` rights `req` needs (a service account user is impersonated through its
/// `serviceaccounts` object, as in a cluster).
pub fn rights_needed(req: &ImpersonationRequest) -> Vec<ImpersonateRight> {
    let mut out = Vec::new();
    match req
        .user
        .strip_prefix(SA_USER)
        .and_then(|r| r.split_once(':'))
    {
        Some((ns, sa)) => out.push(ImpersonateRight {
            resource: "serviceaccounts",
            name: sa.to_owned(),
            namespace: Some(ns.to_owned()),
        }),
        None => out.push(ImpersonateRight {
            resource: "users",
            name: req.user.clone(),
            namespace: None,
        }),
    }
    for g in &req.groups {
        out.push(ImpersonateRight {
            resource: "groups",
            name: g.clone(),
            namespace: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> TenantId {
        TenantId::parse("foofoo").unwrap()
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn tenant_identities_can_be_impersonated() {
        assert_eq!(requested(&t(), &h(&[("accept", "x")])).unwrap(), None);
        let r = requested(
            &t(),
            &h(&[
                ("impersonate-user", "alice"),
                ("impersonate-group", "devs"),
                ("impersonate-group", "system:authenticated"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.user, "alice");
        assert_eq!(r.groups, vec!["devs"]);
        assert_eq!(
            rights_needed(&r),
            vec![
                ImpersonateRight {
                    resource: "users",
                    name: "alice".into(),
                    namespace: None
                },
                ImpersonateRight {
                    resource: "groups",
                    name: "devs".into(),
                    namespace: None
                }
            ]
        );
        let sa = requested(
            &t(),
            &h(&[
                ("impersonate-user", "system:serviceaccount:ci:deployer"),
                ("impersonate-group", "system:serviceaccounts:ci"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert!(sa.groups.is_empty());
        assert_eq!(
            rights_needed(&sa),
            vec![ImpersonateRight {
                resource: "serviceaccounts",
                name: "deployer".into(),
                namespace: Some("ci".into())
            }]
        );
        assert!(
            rights_needed(&sa)[0]
                .refusal("bob")
                .contains("in the namespace \"ci\"")
        );
    }

    #[test]
    fn nothing_outside_the_tenant_can_be_impersonated() {
        for (k, v) in [
            ("impersonate-user", "system:admin"),
            ("impersonate-user", "system:kube-controller-manager"),
            ("impersonate-user", "paddock:barbar:admin"),
            (
                "impersonate-user",
                "paddock:cluster:foofoo:paddock:foofoo:admin",
            ),
            ("impersonate-user", "system:serviceaccount:kube-system"),
        ] {
            let e = requested(&t(), &h(&[(k, v)])).unwrap_err();
            assert!(matches!(e.http_code(), 400 | 403), "{v}: {e}");
        }
        for g in [
            "system:masters",
            "system:nodes",
            "system:serviceaccounts",
            "paddock:tenant:barbar",
            "paddock:tenants",
            "paddock:tenant-cluster-scope-admins",
            "paddock:barbar:tenant-admins",
        ] {
            let e = requested(
                &t(),
                &h(&[("impersonate-user", "alice"), ("impersonate-group", g)]),
            )
            .unwrap_err();
            assert_eq!(e.http_code(), 403, "{g}");
        }
        // Groups without a user, user extras and uids are refused.
        assert_eq!(
            requested(&t(), &h(&[("impersonate-group", "devs")]))
                .unwrap_err()
                .http_code(),
            400
        );
        for k in ["impersonate-uid", "impersonate-extra-scopes"] {
            let e = requested(&t(), &h(&[("impersonate-user", "alice"), (k, "x")])).unwrap_err();
            assert_eq!(e.http_code(), 403, "{k}");
        }
    }
}
