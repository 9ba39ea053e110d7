//! `GET tenants/<id>/users` (docs/security.md "Who is who"): the tenant's issued certificates
//! and the users seen acting in it (`crate::auth::seen`), one item per identity.

use std::collections::BTreeMap;

use paddock_api::user::{KIND, TenantUser, TenantUserStatus, UserCertificate, UserMeta};
use paddock_store::{CertRecord, SeenUser};

use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// The users of tenant `id`; a 404 for a tenant that does not exist.
pub async fn tenant_users(state: &AppState, id: &str) -> Result<Vec<TenantUser>, ServerError> {
    if state.cache.tenant(id).is_none() {
        return Err(ServerError::NotFound(format!(
            "tenants.paddock.io {id:?} not found"
        )));
    }
    let certs = state.store.list_certs(Some(id)).await?;
    let seen = state.store.list_users(id).await?;
    Ok(merge(id, &certs, &seen))
}

/// One item per (sign-in, user): certificates issued to a name are that name's
/// `certificate` identity, whether it acted yet or not. Sorted by user, then sign-in.
fn merge(tenant: &str, certs: &[CertRecord], seen: &[SeenUser]) -> Vec<TenantUser> {
    let mut by_identity: BTreeMap<(String, String), TenantUserStatus> = BTreeMap::new();
    for s in seen {
        let status = slot(&mut by_identity, tenant, &s.user, &s.via);
        status.groups.clone_from(&s.groups);
        status.last_seen = Some(s.last_seen.clone());
        status.credential.clone_from(&s.credential);
    }
    // Oldest first, so that the newest certificate's groups are the ones kept for a name
    // that never acted.
    let mut certs: Vec<&CertRecord> = certs.iter().collect();
    certs.sort_by(|a, b| a.not_after.cmp(&b.not_after));
    for c in certs {
        let status = slot(&mut by_identity, tenant, &c.user, "certificate");
        if status.last_seen.is_none() {
            status.groups.clone_from(&c.groups);
        }
        status.certificates.push(UserCertificate {
            serial: c.serial_hex.clone(),
            not_after: c.not_after.clone(),
            revoked: c.revoked,
        });
    }
    by_identity
        .into_values()
        .map(|status| TenantUser {
            api_version: paddock_api::GROUP_VERSION.to_string(),
            kind: KIND.to_string(),
            metadata: UserMeta {
                name: format!("{}:{}", status.sign_in, status.user),
            },
            status,
        })
        .collect()
}

/// The item of one identity, made when first named.
fn slot<'m>(
    m: &'m mut BTreeMap<(String, String), TenantUserStatus>,
    tenant: &str,
    user: &str,
    via: &str,
) -> &'m mut TenantUserStatus {
    m.entry((user.to_string(), via.to_string()))
        .or_insert_with(|| TenantUserStatus {
            tenant: tenant.to_string(),
            user: user.to_string(),
            sign_in: via.to_string(),
            ..Default::default()
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn cert(serial: &str, user: &str, groups: &[&str], not_after: &str) -> CertRecord {
        CertRecord {
            serial_hex: serial.into(),
            tenant: paddock_core::TenantId::parse("acme01").ok(),
            user: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            not_after: not_after.into(),
            revoked: false,
            revoked_at: None,
        }
    }

    fn seen(user: &str, via: &str, groups: &[&str]) -> SeenUser {
        SeenUser {
            tenant: "acme01".into(),
            user: user.into(),
            via: via.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            credential: None,
            last_seen: "2026-11-30T08:00:00Z".into(),
        }
    }

    #[test]
    fn certificates_and_sightings_of_one_identity_are_one_item() {
        let certs = [
            cert("0b", "alice", &["ops"], "2026-12-02T00:00:00Z"),
            cert("0a", "alice", &["devs"], "2026-12-01T00:00:00Z"),
            cert("0c", "carol", &["qa"], "2026-12-01T00:00:00Z"),
        ];
        let seen = [
            seen("alice", "certificate", &["devs"]),
            seen("alice", "oidc", &["oidc:eng"]),
        ];
        let users = merge("acme01", &certs, &seen);
        let names: Vec<&str> = users.iter().map(|u| u.metadata.name.as_str()).collect();
        assert_eq!(
            names,
            ["certificate:alice", "oidc:alice", "certificate:carol"]
        );
        let alice = &users[0].status;
        // What it acted with wins over its certificates' groups.
        assert_eq!(alice.groups, ["devs"]);
        let serials: Vec<&str> = alice
            .certificates
            .iter()
            .map(|c| c.serial.as_str())
            .collect();
        assert_eq!(serials, ["0a", "0b"]);
        assert!(alice.last_seen.is_some());
        // Never seen: the newest certificate's groups, no lastSeen.
        let carol = &users[2].status;
        assert_eq!(
            (carol.groups.as_slice(), carol.last_seen.as_deref()),
            (&["qa".to_string()][..], None)
        );
        assert!(users[1].status.certificates.is_empty());
    }
}
