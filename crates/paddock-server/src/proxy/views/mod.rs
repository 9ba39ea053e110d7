//! Each user's own view of the tenant's namespaces (issue 40; docs/security.md "Each user's
//! own view"). A user who is not a tenant admin holds no right to list namespaces upstream
//! (its rights are RoleBindings inside the tenant's namespaces), so a cluster would answer
//! `kubectl get ns` with a 403. paddock answers with the tenant's namespaces in which the
//! user can do anything: it lists them with its own credential (label-selected, the tenant's
//! only) and keeps those where a `SelfSubjectRulesReview` impersonated as the user shows a
//! right of that namespace's own (`decide`). A watch is filtered the same way and
//! re-evaluated while it is open (`watch`). A tenant admin's namespace reads do not come here.

mod decide;
mod watch;

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use paddock_core::response::views as judge;
use paddock_core::{Plan, TenantContext, Verb};
use serde_json::Value;

use crate::proxy::Job;
use crate::proxy::whole::{content_type_of, rewrite_whole};
use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::res_body::ResBody;

/// Largest namespace list read for a view.
const MAX_VIEW_LIST_BYTES: usize = 64 << 20;

/// Is this a list or watch of namespaces by a caller who is not a tenant admin?
pub fn is_user_view(job: &Job) -> bool {
    let plan = &job.plan;
    let namespaces = plan
        .resource
        .as_ref()
        .is_some_and(|r| r.upstream_group.is_empty() && r.resource == "namespaces");
    let collection = matches!(&plan.request.path,
        paddock_core::ApiPath::Resource(rp) if rp.name.is_none() && rp.namespace.is_none());
    namespaces
        && collection
        && matches!(plan.request.verb, Verb::List | Verb::Watch)
        && !paddock_core::identity::is_tenant_admin(&job.caller.groups)
}

/// Serves the user's view: the list, or the watch.
pub async fn serve(state: &Arc<AppState>, job: Arc<Job>) -> Result<Response<ResBody>, ServerError> {
    let accept = paddock_core::upstream_accept(job.accept.as_deref()).into_owned();
    if matches!(job.plan.request.verb, Verb::Watch) {
        return watch::serve(state, job, accept).await;
    }
    let (status, ct, raw) = read(state, &job.plan.upstream_path_and_query, &accept).await?;
    if !status.is_success() {
        return answer(
            status,
            &ct,
            rewrite_whole(&job.ctx, &job.plan, status, &ct, &raw)?,
        );
    }
    let (doc, _) = view_of(state, &job, &raw).await?;
    let filtered = serde_json::to_vec(&doc).map_err(|e| ServerError::Internal(e.to_string()))?;
    let out = rewrite_whole(&job.ctx, &job.plan, status, &ct, &filtered)?;
    answer(status, &ct, out)
}

/// A namespace list as paddock itself reads it (the plan's path: the tenant's label and the
/// client's selectors): status, content type, body.
async fn read(
    state: &AppState,
    path: &str,
    accept: &str,
) -> Result<(StatusCode, String, Bytes), ServerError> {
    let req = Request::builder()
        .method(Method::GET)
        .uri(state.upstream.uri(path)?)
        .header(header::ACCEPT, accept)
        .body(paddock_upstream::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let resp = state
        .upstream
        .send(req, paddock_upstream::upstream::Route::Bulk)
        .await?;
    let status = resp.status();
    let ct = content_type_of(&resp);
    let raw = collect_limited(resp.into_body(), MAX_VIEW_LIST_BYTES).await?;
    Ok((status, ct, raw))
}

/// Upstream's namespace list (`raw`) cut to the user's namespaces, and their upstream names.
async fn view_of(
    state: &AppState,
    job: &Job,
    raw: &[u8],
) -> Result<(Value, BTreeSet<String>), ServerError> {
    let mut doc: Value = serde_json::from_slice(raw)
        .map_err(|e| ServerError::Upstream(format!("namespace list: {e}")))?;
    let prefix = job.ctx.tenant.prefix();
    // The label selected the tenant's namespaces; the exact prefix makes sure.
    let names: Vec<String> = judge::entries(&doc)
        .iter()
        .filter_map(judge::item_name)
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_owned)
        .collect();
    let c = &job.caller;
    let mine = decide::users_namespaces(state, &job.ctx.tenant, &c.user, &c.groups, names).await?;
    judge::keep_entries(&mut doc, |n| mine.contains(n));
    Ok((doc, mine))
}

/// The list a watch is re-evaluated from: the client's selectors, no paging, no watch.
fn list_path(ctx: &TenantContext, plan: &Plan) -> Result<String, ServerError> {
    let query: Vec<String> = plan
        .request
        .query
        .iter()
        .filter(|(k, _)| k == "labelSelector" || k == "fieldSelector")
        .map(|(k, v)| {
            let esc = paddock_upstream::upjson::query_escape;
            format!("{}={}", esc(k), esc(v))
        })
        .collect();
    let parsed = paddock_core::parse_request("GET", "/api/v1/namespaces", Some(&query.join("&")))?;
    Ok(paddock_core::plan(ctx, parsed)?.upstream_path_and_query)
}

fn answer(status: StatusCode, ct: &str, body: Vec<u8>) -> Result<Response<ResBody>, ServerError> {
    let mut r = Response::new(paddock_upstream::body::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_str(ct)
            .unwrap_or(http::HeaderValue::from_static("application/json")),
    );
    Ok(r)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::proxy::test_support::job;

    fn as_admin(j: Arc<Job>) -> Job {
        let mut j = Arc::try_unwrap(j).ok().unwrap();
        j.caller.groups = Arc::from(["tenant-admins".to_owned()]);
        j
    }

    #[test]
    fn only_a_non_admins_namespace_list_or_watch_is_a_view() {
        assert!(is_user_view(&job("GET", "/api/v1/namespaces")));
        assert!(is_user_view(&job("GET", "/api/v1/namespaces?watch=true")));
        assert!(is_user_view(&job(
            "GET",
            "/api/v1/namespaces?labelSelector=team%3Da"
        )));
        // A tenant admin keeps the cluster admin's answer.
        assert!(!is_user_view(&as_admin(job("GET", "/api/v1/namespaces"))));
        // One namespace, anything in one, other kinds: not a view.
        assert!(!is_user_view(&job("GET", "/api/v1/namespaces/web")));
        assert!(!is_user_view(&job("GET", "/api/v1/namespaces/web/pods")));
        assert!(!is_user_view(&job("GET", "/api/v1/pods")));
        assert!(!is_user_view(&job("POST", "/api/v1/namespaces")));
    }

    #[test]
    fn a_watch_is_reevaluated_from_the_clients_selectors_only() {
        let j = job(
            "GET",
            "/api/v1/namespaces?watch=true&resourceVersion=7&labelSelector=team%3Da&timeoutSeconds=30",
        );
        let path = list_path(&j.ctx, &j.plan).unwrap();
        assert!(path.starts_with("/api/v1/namespaces?"), "{path}");
        assert!(path.contains("team%3Da"), "{path}");
        // The tenant's own label is always there.
        assert!(path.contains("paddock.io%2Ftenant"), "{path}");
        assert!(
            !path.contains("watch") && !path.contains("resourceVersion"),
            "{path}"
        );
    }
}
