//! A refusal must not hide a NotFound (paddock_core::request::absent decides; this module probes).
//!
//! Both probes run only after a refusal, never on the path of a request that succeeds, and both
//! look only at names inside the tenant's own view: the namespace probe asks for exactly
//! `<tid>-<ns>` *and* the tenant's label, so it cannot tell a tenant anything about another
//! tenant's or the platform's namespaces; the shared-object probe reads a shared read-only
//! object as the caller's own cluster identity, which may read it anyway.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Method, Response, StatusCode, header};
use http_body::Frame;
use paddock_core::request::absent::{AbsentAnswer, SharedWriteProbe};
use paddock_core::{ParsedRequest, Plan, ResponseKind, TenantContext, TenantId};
use serde_json::{Value, json};

use crate::state::AppState;
use paddock_core::identity::As;
use paddock_upstream::body::BoxError;
use paddock_upstream::body::full;
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::upjson::query_escape;

/// Does the tenant have namespace `upstream_ns` (its label and exact name)? Asked with
/// paddock's own credential; returns the answer and the cluster's current resourceVersion.
pub async fn tenant_namespace_exists(
    state: &AppState,
    t: &TenantId,
    upstream_ns: &str,
) -> Result<(bool, String), ServerError> {
    let path = format!(
        "/api/v1/namespaces?fieldSelector={}&labelSelector={}",
        query_escape(&format!("metadata.name={upstream_ns}")),
        query_escape(&t.tenant_label_selector())
    );
    let a = paddock_upstream::upjson::call(&state.upstream, Method::GET, &path, None, None).await?;
    if !a.status.is_success() {
        return Err(ServerError::Upstream(format!(
            "looking up namespace {upstream_ns} upstream: {}",
            a.message()
        )));
    }
    let exists = a.body["items"]
        .as_array()
        .is_some_and(|items| !items.is_empty());
    let rv = a.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_owned();
    Ok((exists, rv))
}

/// Would the caller hold the right `plan` needs in a namespace of the tenant that does not
/// exist yet? Upstream, a namespace's rights come from RoleBindings inside it: the admins'
/// binding (every tenant admin, in every namespace) and the mirrors of the tenant's
/// ClusterRoleBindings, whose cluster-wide form binds the caller's *shadow* identity. So:
/// an admin always; anyone else if a SelfSubjectAccessReview as the shadow identity says so.
async fn would_be_allowed(
    state: &AppState,
    t: &TenantId,
    user: &str,
    groups: &[String],
    plan: &Plan,
    upstream_ns: &str,
) -> Result<bool, ServerError> {
    if groups
        .iter()
        .any(|g| g == paddock_core::provision::TENANT_ADMIN_GROUP)
    {
        return Ok(true);
    }
    let (Some(info), Some(rp)) = (&plan.resource, plan.resource_path()) else {
        return Ok(false);
    };
    let verb = match plan.request.verb {
        paddock_core::Verb::Connect => "create",
        v => v.as_str(),
    };
    let mut ra = json!({"namespace": upstream_ns, "verb": verb,
                        "group": info.upstream_group, "resource": info.resource});
    if let Some(sub) = &rp.subresource {
        ra["subresource"] = json!(sub);
    }
    if let Some(name) = &rp.name {
        ra["name"] = json!(name);
    }
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": ra}});
    let body = serde_json::to_vec(&review).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = http::Request::builder()
        .method(Method::POST)
        .uri(
            state
                .upstream
                .uri("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")?,
        )
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(paddock_upstream::body::full_up(Bytes::from(body)))
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    crate::proxy::outbound::add_impersonation_as(r.headers_mut(), t, user, groups, As::Shadow)?;
    let resp = state
        .upstream
        .send(r, paddock_upstream::upstream::Route::Short)
        .await?;
    if !resp.status().is_success() {
        return Ok(false);
    }
    let raw = paddock_upstream::limit::collect_limited(resp.into_body(), 1 << 20).await?;
    let v: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    Ok(v["status"]["allowed"].as_bool() == Some(true))
}

/// Upstream refused `plan` (403): when that is because the namespace does not exist in the
/// tenant's view and the caller would be allowed there, the answer a cluster gives instead.
pub async fn answer_if_absent_namespace(
    state: &AppState,
    ctx: &TenantContext,
    plan: &Plan,
    user: &str,
    groups: &[String],
) -> Result<Option<Response<ResBody>>, ServerError> {
    if !paddock_core::request::absent::refusal_may_mean_absent_namespace(plan) {
        return Ok(None);
    }
    let Some(ns) = plan.namespace() else {
        return Ok(None);
    };
    let t = &ctx.tenant;
    let upstream_ns = t.upstream_name(ns);
    let (exists, rv) = tenant_namespace_exists(state, t, &upstream_ns).await?;
    if exists || !would_be_allowed(state, t, user, groups, plan, &upstream_ns).await? {
        return Ok(None);
    }
    let Some(answer) = paddock_core::request::absent::absent_namespace_answer(plan, &rv) else {
        return Ok(None);
    };
    tracing::debug!(tenant = %t, namespace = ns, "answered for a namespace that does not exist");
    Ok(Some(match answer {
        AbsentAnswer::Ok(b) => json_response(StatusCode::OK, b, content_type(plan)),
        AbsentAnswer::NotFound(b) => json_response(StatusCode::NOT_FOUND, b, "application/json"),
        AbsentAnswer::Watch { seconds, first } => {
            let mut r = Response::new(quiet_watch(first, seconds, state.shutdown.clone()));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            r
        }
    }))
}

fn content_type(plan: &Plan) -> &'static str {
    if matches!(plan.response, ResponseKind::Table) {
        "application/json;as=Table;v=v1;g=meta.k8s.io"
    } else {
        "application/json"
    }
}

fn json_response(status: StatusCode, body: Vec<u8>, ct: &'static str) -> Response<ResBody> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, http::HeaderValue::from_static(ct));
    r
}

/// A watch without events: `first` at once, then nothing for `seconds` (or until shutdown),
/// then a clean end.
fn quiet_watch(
    first: Option<Vec<u8>>,
    seconds: u64,
    stop: tokio_util::sync::CancellationToken,
) -> ResBody {
    let head = futures_util::stream::iter(
        first.map(|b| Ok::<Frame<Bytes>, BoxError>(Frame::data(Bytes::from(b)))),
    );
    let wait = futures_util::stream::once(async move {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(seconds)) => {}
            _ = stop.cancelled() => {}
        }
    })
    .filter_map(|()| futures_util::future::ready(None::<Result<Frame<Bytes>, BoxError>>));
    ResBody::boxed(http_body_util::StreamBody::new(head.chain(wait)))
}

/// The planner refused a write to a shared read-only kind: when the named object does not
/// exist (read as the caller's cluster identity, which may read shared kinds), the NotFound a
/// cluster gives; otherwise None (the refusal stands). A caller that may not even read the
/// kind keeps the refusal too.
pub async fn answer_if_shared_object_absent(
    state: &AppState,
    ctx: &TenantContext,
    req: &ParsedRequest,
    user: &str,
    groups: &[String],
) -> Result<Option<Response<ResBody>>, ServerError> {
    let Some(SharedWriteProbe {
        upstream_path,
        not_found,
    }) = paddock_core::request::absent::shared_write_probe(ctx, req)
    else {
        return Ok(None);
    };
    let mut r = http::Request::builder()
        .method(Method::GET)
        .uri(state.upstream.uri(&upstream_path)?)
        .header(header::ACCEPT, "application/json")
        .body(paddock_upstream::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    crate::proxy::outbound::add_impersonation_as(
        r.headers_mut(),
        &ctx.tenant,
        user,
        groups,
        As::Shadow,
    )?;
    let resp = state
        .upstream
        .send(r, paddock_upstream::upstream::Route::Short)
        .await?;
    let status = resp.status();
    paddock_upstream::body::drain(resp.into_body()).await;
    if status == StatusCode::NOT_FOUND {
        return Ok(Some(json_response(
            StatusCode::NOT_FOUND,
            not_found,
            "application/json",
        )));
    }
    Ok(None)
}
