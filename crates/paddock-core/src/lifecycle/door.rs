//! What a suspended tenant may still send through paddock: reads. Every write is refused with a
//! 403 `Status` naming the suspension, before anything is planned or sent upstream.
//!
//! A write is what changes something: every method but `GET`, `HEAD` and `OPTIONS` (create,
//! update, patch, delete, deletecollection, their subresources, a proxy's writes), and
//! `exec`, `attach` and `portforward` of a pod whatever the method (kubectl's WebSocket
//! streams are `GET`s and RBAC counts them as `create`). Not a write: the reviews
//! (`authorization.k8s.io` and `authentication.k8s.io` objects are created to ask a question;
//! `kubectl auth can-i` and `whoami` keep working) and a proxy's `GET`.

use crate::error::TranslateError;
use crate::provision::suspended::SUSPENSION_POLICY;
use crate::tenant::TenantId;

/// The groups whose objects are questions, not changes.
const REVIEW_GROUPS: [&str; 2] = [
    "/apis/authorization.k8s.io/",
    "/apis/authentication.k8s.io/",
];

/// The pod subresources that act on the pod's containers.
const CONTAINER_STREAMS: [&str; 3] = ["exec", "attach", "portforward"];

/// Whether a request with `method` on `path` writes (see the module's comment).
pub fn writes(method: &str, path: &str) -> bool {
    match method {
        "GET" | "HEAD" | "OPTIONS" => container_stream(path),
        "POST" => !is_review(path),
        _ => true,
    }
}

/// Whether `path` is in one of the review groups (its objects are questions).
pub fn is_review(path: &str) -> bool {
    REVIEW_GROUPS.iter().any(|g| path.starts_with(g))
}

/// `.../pods/<name>/exec` (or attach, portforward).
fn container_stream(path: &str) -> bool {
    let mut segs = path.trim_end_matches('/').rsplit('/');
    let (Some(sub), Some(_name), Some(pods)) = (segs.next(), segs.next(), segs.next()) else {
        return false;
    };
    pods == "pods" && CONTAINER_STREAMS.contains(&sub)
}

/// The refusal of a suspended tenant's write: 403, naming the policy.
pub fn suspended_refusal(t: &TenantId) -> TranslateError {
    TranslateError::Forbidden(format!(
        "paddock policy {SUSPENSION_POLICY}: tenant {t} is suspended: writes are refused until the platform resumes it; reads still work"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_every_change_and_the_container_streams() {
        let ns = "/api/v1/namespaces/a-default";
        for (method, path) in [
            ("POST", format!("{ns}/configmaps")),
            ("PUT", format!("{ns}/configmaps/c")),
            ("PATCH", format!("{ns}/configmaps/c")),
            ("DELETE", format!("{ns}/configmaps/c")),
            ("DELETE", format!("{ns}/configmaps")),
            (
                "PATCH",
                "/apis/apps/v1/namespaces/x/deployments/d/scale".into(),
            ),
            ("POST", format!("{ns}/pods/p/exec")),
            ("GET", format!("{ns}/pods/p/exec")),
            ("GET", format!("{ns}/pods/p/attach")),
            ("GET", format!("{ns}/pods/p/portforward/")),
            ("POST", format!("{ns}/services/s/proxy/x")),
            ("POST", format!("{ns}/serviceaccounts/sa/token")),
            ("POST", "/api/v1/namespaces".into()),
            ("PUT", "/api/v1/namespaces/x".into()),
            (
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions".into(),
            ),
        ] {
            assert!(writes(method, &path), "{method} {path}");
        }
        for (method, path) in [
            ("GET", format!("{ns}/configmaps")),
            ("GET", format!("{ns}/pods/p/log")),
            ("HEAD", format!("{ns}/pods/p")),
            ("GET", format!("{ns}/services/s/proxy/x")),
            ("GET", format!("{ns}/pods/exec")),
            (
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews".into(),
            ),
            (
                "POST",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews".into(),
            ),
            (
                "POST",
                "/apis/authorization.k8s.io/v1/namespaces/x/localsubjectaccessreviews".into(),
            ),
        ] {
            assert!(!writes(method, &path), "{method} {path}");
        }
    }

    #[test]
    fn the_refusal_is_a_403_naming_the_policy_and_the_tenant() {
        let t = TenantId::parse("susp01").unwrap();
        let e = suspended_refusal(&t);
        assert_eq!((e.http_code(), e.reason()), (403, "Forbidden"));
        assert!(
            e.message()
                .starts_with("paddock policy suspension: tenant susp01 is suspended"),
            "{}",
            e.message()
        );
    }
}
