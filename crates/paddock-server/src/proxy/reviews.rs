//! Access reviews through paddock answer for the tenant's cluster (paddock_core::identity::review
//! decides; this module asks upstream). See docs/security.md, "Permission checks".

use paddock_core::identity::review::{
    ReviewFacts, ReviewNext, admin_allowed_status, self_review_next,
};
use paddock_core::{Plan, Scope, TenantId};
use serde_json::Value;

use crate::state::AppState;
use paddock_core::identity::As;
use paddock_upstream::error::ServerError;

/// A translated `SelfSubjectAccessReview` about a cluster-scoped kind (`kubectl auth can-i
/// delete nodes` sends the current namespace along): the namespace is dropped, so that the
/// answer is the one for the cluster-scoped object (asked as the shadow identity), not the
/// meaningless one for "nodes in a namespace" that a namespace admin would get.
pub fn normalize_self_review(
    ctx: &paddock_core::TenantContext,
    plan: &Plan,
    body: Vec<u8>,
) -> Vec<u8> {
    let Some(info) = &plan.resource else {
        return body;
    };
    if !(info.upstream_group == "authorization.k8s.io"
        && info.resource == "selfsubjectaccessreviews")
    {
        return body;
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    // `get_mut`, not `&mut v["spec"][..]`, which panics when the body or its `spec` is not an
    // object (`{"spec": 1}`): such a body goes upstream as it is, to be refused there.
    let Some(ra) = v
        .get_mut("spec")
        .and_then(|s| s.get_mut("resourceAttributes"))
    else {
        return body;
    };
    if !ra.is_object() || ra["namespace"].as_str().unwrap_or("").is_empty() {
        return body;
    }
    let group = ra["group"].as_str().unwrap_or("").to_owned();
    let resource = ra["resource"].as_str().unwrap_or("").to_owned();
    let cluster = ctx
        .catalog
        .resolve_upstream_any_version(&ctx.tenant, &group, &resource)
        .is_some_and(|i| i.scope == Scope::Cluster);
    if !cluster {
        return body;
    }
    if let Some(m) = ra.as_object_mut() {
        m.remove("namespace");
    }
    serde_json::to_vec(&v).unwrap_or(body)
}

/// Is this a `SelfSubjectAccessReview` or a `SelfSubjectRulesReview` (answered for the
/// tenant's cluster by [`answer_for_tenant`])?
pub fn is_self_review(plan: &Plan) -> bool {
    plan.resource.as_ref().is_some_and(|i| {
        i.upstream_group == "authorization.k8s.io"
            && matches!(
                i.resource.as_str(),
                "selfsubjectaccessreviews"
                    | "selfsubjectrulesreviews"
                    | "subjectaccessreviews"
                    | "localsubjectaccessreviews"
            )
    })
}

/// Upstream's answer (JSON) to a self review, as the tenant's cluster answers it;
/// `rules_namespace` is the namespace a rules review asked about (upstream does not repeat it).
#[allow(clippy::too_many_arguments)]
pub async fn answer_for_tenant(
    state: &AppState,
    ctx: &paddock_core::TenantContext,
    plan: &Plan,
    user: &str,
    groups: &[String],
    asked_as: As,
    rules_namespace: Option<&str>,
    raw: bytes::Bytes,
) -> Result<bytes::Bytes, ServerError> {
    let t = &ctx.tenant;
    if is_self_access_review(plan) {
        return recheck_self_review(state, ctx, t, user, groups, asked_as, raw).await;
    }
    if plan.resource.as_ref().is_some_and(|i| {
        i.resource == "subjectaccessreviews" || i.resource == "localsubjectaccessreviews"
    }) {
        // A LocalSubjectAccessReview is a SubjectAccessReview confined to its namespace
        // (the apiserver requires the attributes' namespace to be the review's): the same
        // judgement, so a namespace that does not exist yet and the subject's
        // ClusterRoleBindings count as in a cluster.
        return recheck_subject_review(state, ctx, user, groups, raw).await;
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(&raw) else {
        return Ok(raw);
    };
    let ns = rules_namespace.unwrap_or("").to_owned();
    if t.strip(&ns).is_none() {
        return Ok(raw);
    }
    let review = serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                                    "spec": {"namespace": ns}});
    if let Some(shadow) = ask_review_as(
        state,
        t,
        user,
        groups,
        As::Shadow,
        "selfsubjectrulesreviews",
        &review,
    )
    .await?
    {
        paddock_core::identity::review::merge_rules(&mut v, &shadow);
    }
    let admin = groups
        .iter()
        .any(|g| g == paddock_core::provision::TENANT_ADMIN_GROUP);
    if admin
        && !paddock_core::identity::review::rules_allow_everything(&v)
        && !crate::proxy::absent::tenant_namespace_exists(state, t, &ns)
            .await?
            .0
    {
        paddock_core::identity::review::add_admin_rules(&mut v);
    }
    let out = serde_json::to_vec(&v).map_err(|e| ServerError::Internal(e.to_string()))?;
    Ok(bytes::Bytes::from(out))
}

/// Is this a `SelfSubjectAccessReview`?
pub fn is_self_access_review(plan: &Plan) -> bool {
    plan.resource.as_ref().is_some_and(|i| {
        i.upstream_group == "authorization.k8s.io" && i.resource == "selfsubjectaccessreviews"
    })
}

/// Upstream's answer to a `SelfSubjectAccessReview` (JSON, asked as `asked_as`) turned into
/// the answer for the tenant's cluster: asked again as the shadow identity, or allowed for an
/// admin, as [`self_review_next`] decides (at most one namespace probe and one more question).
#[allow(clippy::too_many_arguments)]
pub async fn recheck_self_review(
    state: &AppState,
    ctx: &paddock_core::TenantContext,
    t: &TenantId,
    user: &str,
    groups: &[String],
    asked_as: As,
    raw: bytes::Bytes,
) -> Result<bytes::Bytes, ServerError> {
    let Ok(answer) = serde_json::from_slice::<Value>(&raw) else {
        return Ok(raw);
    };
    let facts = ReviewFacts {
        admin: groups
            .iter()
            .any(|g| g == paddock_core::provision::TENANT_ADMIN_GROUP),
        asked_as_shadow: asked_as == As::Shadow,
        namespace_exists: None,
    };
    let asker = Asker {
        t,
        user,
        groups,
        subject_groups: None,
    };
    settle(state, ctx, &asker, answer, facts).await
}

/// Who asks a review's shadow form, and of which review.
struct Asker<'a> {
    t: &'a TenantId,
    /// The caller.
    user: &'a str,
    groups: &'a [String],
    /// For a `SubjectAccessReview`, its subject's groups; `None` for a self review.
    subject_groups: Option<&'a [String]>,
}

impl Asker<'_> {
    /// Asks the shadow form of `review` upstream and puts its answer in `answer`: the whole
    /// answer for a self review, its `status` for a subject review (whose `spec` names the
    /// subject). Whether there was an answer to take.
    async fn ask_shadow(
        &self,
        state: &AppState,
        answer: &mut Value,
        review: &Value,
    ) -> Result<bool, ServerError> {
        let (t, user, groups) = (self.t, self.user, self.groups);
        let Some(subject_groups) = self.subject_groups else {
            let Some(asked) = ask_as(state, t, user, groups, As::Shadow, review).await? else {
                return Ok(false);
            };
            *answer = asked;
            return Ok(true);
        };
        let Some(subject) = answer["spec"]["user"].as_str() else {
            return Ok(false);
        };
        let shadow = paddock_core::identity::review::shadow_subject_review(
            t,
            review,
            subject,
            subject_groups,
            &answer["spec"]["extra"],
        );
        let resource = "subjectaccessreviews";
        let asked = ask_review_as(state, t, user, groups, As::Shadow, resource, &shadow).await?;
        let Some(asked) = asked else {
            return Ok(false);
        };
        set_status(answer, asked["status"].clone());
        Ok(true)
    }
}

/// Follows [`self_review_next`]'s decisions on upstream's `answer` (at most one namespace
/// probe and one more question, three steps in all) and returns the answer that stands.
async fn settle(
    state: &AppState,
    ctx: &paddock_core::TenantContext,
    asker: &Asker<'_>,
    mut answer: Value,
    mut facts: ReviewFacts,
) -> Result<bytes::Bytes, ServerError> {
    for _ in 0..3 {
        match self_review_next(ctx, &answer, facts) {
            ReviewNext::Keep => break,
            ReviewNext::AllowAdmin => {
                set_status(&mut answer, admin_allowed_status());
                break;
            }
            ReviewNext::ProbeNamespace(ns) => {
                let (exists, _) =
                    crate::proxy::absent::tenant_namespace_exists(state, asker.t, &ns).await?;
                facts.namespace_exists = Some(exists);
            }
            ReviewNext::AskShadow(review) => {
                if !asker.ask_shadow(state, &mut answer, &review).await? {
                    break;
                }
                facts.asked_as_shadow = true;
            }
        }
    }
    let out = serde_json::to_vec(&answer).map_err(|e| ServerError::Internal(e.to_string()))?;
    Ok(bytes::Bytes::from(out))
}

/// `answer.status = status`. Not `answer["status"] = ..`, which panics on an answer that is
/// not an object (upstream's, so never in practice): such an answer is left as it came.
fn set_status(answer: &mut Value, status: Value) {
    if let Some(m) = answer.as_object_mut() {
        m.insert("status".into(), status);
    }
}

/// Posts one `SelfSubjectAccessReview` (upstream names) as the caller's real or shadow
/// identity; None when upstream does not answer it.
pub(crate) async fn ask_as(
    state: &AppState,
    t: &TenantId,
    user: &str,
    groups: &[String],
    who: As,
    review: &Value,
) -> Result<Option<Value>, ServerError> {
    ask_review_as(
        state,
        t,
        user,
        groups,
        who,
        "selfsubjectaccessreviews",
        review,
    )
    .await
}

/// Posts one self review of kind `resource` (upstream names) as the real or shadow identity.
pub(crate) async fn ask_review_as(
    state: &AppState,
    t: &TenantId,
    user: &str,
    groups: &[String],
    who: As,
    resource: &str,
    review: &Value,
) -> Result<Option<Value>, ServerError> {
    let body = serde_json::to_vec(review).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = http::Request::builder()
        .method(http::Method::POST)
        .uri(
            state
                .upstream
                .uri(&format!("/apis/authorization.k8s.io/v1/{resource}"))?,
        )
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(paddock_upstream::body::full_up(bytes::Bytes::from(body)))
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    crate::proxy::outbound::add_impersonation_as(r.headers_mut(), t, user, groups, who)?;
    let resp = state
        .upstream
        .send(r, paddock_upstream::upstream::Route::Short)
        .await?;
    if !resp.status().is_success() {
        paddock_upstream::body::drain(resp.into_body()).await;
        return Ok(None);
    }
    let raw = paddock_upstream::limit::collect_limited(resp.into_body(), 1 << 20).await?;
    Ok(serde_json::from_slice(&raw).ok())
}

/// Whether the caller may do `resource_attributes` (upstream names) in the tenant's cluster:
/// the same questions as a tenant's own `SelfSubjectAccessReview` (impersonation and the
/// absent-namespace answers use it).
pub async fn may(
    state: &AppState,
    ctx: &paddock_core::TenantContext,
    user: &str,
    groups: &[String],
    resource_attributes: Value,
) -> Result<bool, ServerError> {
    let review = serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                                    "spec": {"resourceAttributes": resource_attributes}});
    let Some(first) = ask_as(state, &ctx.tenant, user, groups, As::Real, &review).await? else {
        return Ok(false);
    };
    let raw = serde_json::to_vec(&first).map_err(|e| ServerError::Internal(e.to_string()))?;
    let out = recheck_self_review(
        state,
        ctx,
        &ctx.tenant,
        user,
        groups,
        As::Real,
        bytes::Bytes::from(raw),
    )
    .await?;
    let v: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
    Ok(v["status"]["allowed"].as_bool() == Some(true))
}

/// Upstream's answer to a tenant's `SubjectAccessReview` (about a tenant identity, upstream
/// form) as the tenant's cluster answers it: the same decisions as for a self review, with the
/// subject's shadow form asked where the shadow identity would be (its ClusterRoleBindings),
/// and the subject's membership in the admins' group standing for the admins' bindings.
async fn recheck_subject_review(
    state: &AppState,
    ctx: &paddock_core::TenantContext,
    user: &str,
    groups: &[String],
    raw: bytes::Bytes,
) -> Result<bytes::Bytes, ServerError> {
    let t = &ctx.tenant;
    let Ok(answer) = serde_json::from_slice::<Value>(&raw) else {
        return Ok(raw);
    };
    let admin_group = paddock_core::identity::upstream_admin_group(t);
    let subject_groups: Vec<String> = answer["spec"]["groups"]
        .as_array()
        .map(|gs| {
            gs.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let facts = ReviewFacts {
        admin: subject_groups.contains(&admin_group),
        asked_as_shadow: false,
        namespace_exists: None,
    };
    let asker = Asker {
        t,
        user,
        groups,
        subject_groups: Some(&subject_groups),
    };
    settle(state, ctx, &asker, answer, facts).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Self reviews whose body or `spec` is not an object once panicked here
    /// (`&mut v["spec"]["resourceAttributes"]`); they pass unchanged now.
    #[test]
    fn self_review_of_another_shape_passes_unchanged() {
        let job = crate::proxy::test_support::job(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        );
        for body in [
            &br#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":1}"#[..],
            br#"{"spec":"x"}"#,
            br#"{"spec":[{"resourceAttributes":{}}]}"#,
            br#"{"spec":{"resourceAttributes":"x"}}"#,
            b"[1]",
            b"7",
        ] {
            // What the translation lets through reaches the normalisation.
            if let Ok((translated, _)) = paddock_core::translate_request_body(
                &job.ctx,
                &job.plan,
                "application/json",
                body,
            ) {
                let _ = normalize_self_review(&job.ctx, &job.plan, translated);
            }
            assert_eq!(
                normalize_self_review(&job.ctx, &job.plan, body.to_vec()),
                body,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn status_is_set_on_objects_only() {
        let mut v = serde_json::json!({"spec": {}});
        set_status(&mut v, serde_json::json!({"allowed": true}));
        assert_eq!(v["status"]["allowed"], true);
        for odd in [serde_json::json!([]), serde_json::json!("x"), Value::Null] {
            let mut v = odd.clone();
            set_status(&mut v, serde_json::json!({"allowed": true}));
            assert_eq!(v, odd);
        }
    }

    #[test]
    fn self_review_of_a_cluster_scoped_kind_loses_its_namespace() {
        let job = crate::proxy::test_support::job(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        );
        let body = br#"{"spec":{"resourceAttributes":{"namespace":"foofoo-web","verb":"delete","resource":"nodes"}}}"#;
        let out = normalize_self_review(&job.ctx, &job.plan, body.to_vec());
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["spec"]["resourceAttributes"],
            serde_json::json!({"verb": "delete", "resource": "nodes"})
        );
    }
}
