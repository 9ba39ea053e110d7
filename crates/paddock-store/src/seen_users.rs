//! The users a tenant has (docs/security.md "Who is who"): each identity that acted in the
//! tenant — a certificate's user, an OIDC user, a pod's service account — with how it
//! signed in, its groups and when it was last seen. Written by the replica that served the
//! user, at most once per interval per user (the server's `auth::seen`); read only by
//! `paddock user list`. Not in the cache: no request reads it.
//!
//! etcd: `<prefix>/users/<tenant>/<via>/<hex of the user name>` (a user name may hold `/`);
//! a plain put, last writer wins (two replicas' `lastSeen` differ by less than the interval).
//! Embedded: in the state file, keyed the same way.

use serde::{Deserialize, Serialize};

use crate::{StoreError, check_tenant_id};

/// One identity seen acting in a tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeenUser {
    /// The tenant.
    pub tenant: String,
    /// The user name as the tenant sees it (as its RBAC names it).
    pub user: String,
    /// How it signed in: `certificate`, `oidc` or `serviceaccount`.
    pub via: String,
    /// The groups it carried the last time (the tenant's names).
    #[serde(default)]
    pub groups: Vec<String>,
    /// What identified the credential the last time: a certificate's serial, an OIDC
    /// token's `iss` and `sub`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// RFC 3339.
    pub last_seen: String,
}

impl SeenUser {
    /// Where it is kept, below the store's prefix (`users/<tenant>/<via>/<hex>`).
    pub(crate) fn key(&self) -> Result<String, StoreError> {
        check_tenant_id(&self.tenant)?;
        if !matches!(self.via.as_str(), "certificate" | "oidc" | "serviceaccount") {
            return Err(StoreError::Invalid(format!(
                "unknown sign-in kind {:?}",
                self.via
            )));
        }
        if self.user.is_empty() || self.user.len() > 1024 {
            return Err(StoreError::Invalid(
                "a user name must have 1 to 1024 bytes".into(),
            ));
        }
        let hex: String = self.user.bytes().map(|b| format!("{b:02x}")).collect();
        Ok(format!("users/{}/{}/{hex}", self.tenant, self.via))
    }
}

pub(crate) fn tenant_users_key(tenant: &str) -> String {
    format!("users/{tenant}/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(user: &str, via: &str) -> SeenUser {
        SeenUser {
            tenant: "acme01".into(),
            user: user.into(),
            via: via.into(),
            groups: vec!["devs".into()],
            credential: None,
            last_seen: "2026-11-30T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_user_name_with_a_slash_stays_inside_its_tenant_key() {
        let k = seen("https://idp.example/#alice", "oidc").key().unwrap();
        assert!(k.starts_with("users/acme01/oidc/"), "{k}");
        assert_eq!(k.matches('/').count(), 3, "{k}");
    }

    #[test]
    fn unknown_sign_in_kinds_and_empty_names_are_refused() {
        assert!(seen("alice", "password").key().is_err());
        assert!(seen("", "certificate").key().is_err());
        let mut bad = seen("alice", "certificate");
        bad.tenant = "../x".into();
        assert!(bad.key().is_err());
    }

    #[tokio::test]
    async fn the_embedded_store_lists_one_tenants_users_and_forgets_them_with_it() {
        let dir = std::env::temp_dir().join(format!("paddock-seen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = crate::Store::open_embedded(&dir).await.unwrap();
        store
            .note_user(&seen("alice", "certificate"))
            .await
            .unwrap();
        let mut other = seen("bob", "oidc");
        other.tenant = "acme02".into();
        store.note_user(&other).await.unwrap();
        let mut again = seen("alice", "certificate");
        again.last_seen = "2026-11-30T01:00:00Z".into();
        store.note_user(&again).await.unwrap();
        let listed = store.list_users("acme01").await.unwrap();
        assert_eq!(listed, vec![again]);
        store.forget_users("acme02").await.unwrap();
        assert!(store.list_users("acme02").await.unwrap().is_empty());
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
