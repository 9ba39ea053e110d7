//! After a tenant creates a CRD: its admins may use its resources before the create is
//! answered, as a cluster admin may at once (issue 39: `make conformance` once saw a tenant's
//! first custom resource refused 0.3 s after its CRD was created).
//!
//! The follow-up brings the tenant's custom-resources role in step first (`rbac_sync`,
//! compare-and-swap from a fresh read: paddock-reconciler `crd_grant.rs`); the apiserver's
//! RBAC authorizer reads roles from a watch of its own, so the role written is not always
//! the role it judges by yet. So the follow-up then asks the apiserver, as the tenant's
//! admins' shadow identity (a SelfSubjectAccessReview, which the same authorizer answers),
//! whether they may create the new resource, until it says yes: at most [`GRANT_WAIT`], then
//! the answer goes out anyway (logged). The role covers the group's resources of either scope
//! (a namespaced CRD's are covered in each namespace by the admins' RoleBinding too), so the
//! question is the same for both. A dry run creates nothing and waits for nothing.

use std::time::Duration;

use paddock_core::identity::As;
use serde_json::{Value, json};

use super::Job;
use crate::state::AppState;

/// The longest a CRD create's answer waits for the authorizer.
pub const GRANT_WAIT: Duration = Duration::from_secs(5);
/// The first pause between two questions (doubled up to [`LONGEST_PAUSE`]).
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(200);

/// A CRD a request creates (a create, or an apply that may create): its upstream group and
/// plural.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCrd {
    pub group: String,
    pub plural: String,
}

impl NewCrd {
    /// From the translated body of a CRD create or apply (JSON or YAML); None when it does
    /// not name both.
    pub fn of_body(translated: &[u8]) -> Option<NewCrd> {
        let v: Value = serde_json::from_slice(translated)
            .ok()
            .or_else(|| serde_norway::from_slice(translated).ok())?;
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
        Some(NewCrd {
            group: s("/spec/group")?,
            plural: s("/spec/names/plural")?,
        })
    }

    fn review(&self) -> Value {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
               "spec": {"resourceAttributes": {"group": self.group, "resource": self.plural,
                                               "verb": "create"}}})
    }
}

/// Waits (bounded) until the tenant's admins may create the new CRD's resources; a refusal
/// after the first question brings the role in step again (a sync that failed, or a write
/// another replica raced).
pub async fn wait_for_grant(state: &AppState, job: &Job, crd: &NewCrd) {
    let tenant = &job.caller.tenant;
    let admins = [paddock_core::provision::TENANT_ADMIN_GROUP.to_owned()];
    let review = crd.review();
    let started = tokio::time::Instant::now();
    let mut pause = FIRST_PAUSE;
    let mut asked = 0u32;
    loop {
        asked += 1;
        let answer = crate::proxy::reviews::ask_as(
            state,
            tenant,
            &job.caller.user,
            &admins,
            As::Shadow,
            &review,
        )
        .await;
        match answer {
            Ok(Some(a)) if a["status"]["allowed"].as_bool() == Some(true) => {
                if asked > 1 {
                    tracing::info!(%tenant, group = crd.group, asked, waited_ms = started.elapsed().as_millis() as u64,
                        "a new CRD's grant reached the apiserver's authorizer");
                }
                return;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(%tenant, group = crd.group, error = %e, "asking whether a new CRD's grant is in place failed");
            }
        }
        if started.elapsed() + pause > GRANT_WAIT {
            tracing::warn!(%tenant, group = crd.group, asked,
                "a new CRD's resources are still refused to the tenant's admins after {GRANT_WAIT:?}; answering anyway (the resync keeps the grant)");
            return;
        }
        if asked == 1
            && let Err(e) = paddock_reconciler::crd_grant::converge(&state.upstream, tenant).await
        {
            tracing::warn!(%tenant, error = %e, "writing the custom-resources grant failed");
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_crd_is_read_from_json_and_yaml_bodies() {
        let want = NewCrd {
            group: "foofoo-example.com".into(),
            plural: "widgets".into(),
        };
        let json = br#"{"spec":{"group":"foofoo-example.com","names":{"plural":"widgets"}}}"#;
        assert_eq!(NewCrd::of_body(json).as_ref(), Some(&want));
        let yaml = b"spec:\n  group: foofoo-example.com\n  names: {plural: widgets}\n";
        assert_eq!(NewCrd::of_body(yaml).as_ref(), Some(&want));
        assert_eq!(NewCrd::of_body(br#"{"spec":{"group":"g"}}"#), None);
        assert_eq!(NewCrd::of_body(b"k8s\x00\x01"), None);
        let r = want.review();
        assert_eq!(
            r["spec"]["resourceAttributes"],
            json!({"group": "foofoo-example.com", "resource": "widgets", "verb": "create"})
        );
    }
}
