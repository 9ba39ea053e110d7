//! A cluster-wide list: one list per tenant namespace, merged in namespace order.

use paddock_core::response::merge::ListMerger;

use super::*;

/// A fan-out list is held back until it is complete (so a refusal in any namespace answers
/// with its own Status, as a missing cluster-wide grant would) up to this many bytes; a bigger
/// one starts streaming, and a refusal after that point ends the stream with an error.
const FANOUT_HOLD_BYTES: usize = 8 << 20;

async fn fetch_part(
    ctx: &TenantContext,
    part: &Part,
    user: &str,
    groups: &[String],
    accept: &str,
) -> Result<ListPart, ServerError> {
    let (state, p) = (&part.state, &part.plan);
    let (mut status, mut content_type, mut raw) =
        fetch_raw(ctx, part, user, groups, accept).await?;
    if status == StatusCode::FORBIDDEN && !paddock_core::identity::is_tenant_admin(groups) {
        // Not the user's: the user's own view lists what it may list, namespace by
        // namespace, instead of a 403 for the whole (docs/security.md "Each user's own
        // view").
        return empty_part(p);
    }
    if matches!(status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND) {
        let binding = if status == StatusCode::FORBIDDEN {
            admins_binding(state, ctx, p, groups).await
        } else {
            AdminsBinding::NotAsked
        };
        if binding == AdminsBinding::Missing || namespace_going(state, ctx, p).await {
            // Deleted (or started terminating, its RoleBindings going first) after the
            // namespaces were listed: a cluster admin's list would simply not show it any
            // more. Or created a moment ago and not yet bound for the tenant's admins (the
            // create's follow-up binds it before answering): it holds nothing of the tenant's
            // yet.
            return empty_part(p);
        }
        if binding == AdminsBinding::Present {
            // Bound, yet refused: the binding was written a moment ago and the apiserver's
            // authorizer has not seen it yet (its RBAC cache lags the write). Ask once more
            // after that settles; the second answer stands, whatever it is.
            tokio::time::sleep(RBAC_CACHE_SETTLE).await;
            (status, content_type, raw) = fetch_raw(ctx, part, user, groups, accept).await?;
        }
    }
    let doc = rewrite_whole(ctx, p, status, &content_type, &raw)?;
    Ok(ListPart {
        status,
        content_type,
        doc,
    })
}

/// How long a tenant admin's refused part waits before it is asked again when the
/// namespace's admins' RoleBinding exists (the apiserver's RBAC cache catching up with it).
const RBAC_CACHE_SETTLE: std::time::Duration = std::time::Duration::from_millis(750);

/// One namespace's list as upstream answered it: status, content type, body.
async fn fetch_raw(
    ctx: &TenantContext,
    part: &Part,
    user: &str,
    groups: &[String],
    accept: &str,
) -> Result<(StatusCode, String, Bytes), ServerError> {
    let (state, p) = (&part.state, &part.plan);
    let (resp, _) = send_one(state, p, &ctx.tenant, user, groups, accept, false)
        .await
        .map_err(|e| part.unreachable(ctx, e))?;
    let status = resp.status();
    let content_type = content_type_of(&resp);
    let raw = collect_limited(resp.into_body(), MAX_NAMESPACE_LIST_BYTES).await?;
    Ok((status, content_type, raw))
}

/// The empty list a namespace that is gone, or not yet the tenant's, contributes.
fn empty_part(p: &Plan) -> Result<ListPart, ServerError> {
    let table = matches!(p.response, ResponseKind::Table);
    let doc = serde_json::to_vec(&empty_list(p, table))
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    Ok(ListPart {
        status: StatusCode::OK,
        content_type: "application/json".into(),
        doc,
    })
}

/// Who asks for a fan-out list, in what form, and the merged list's resourceVersion when it
/// spans clusters.
pub(super) struct ListCaller<'a> {
    pub(super) user: &'a str,
    pub(super) groups: &'a [String],
    pub(super) accept: &'a str,
    pub(super) merged_version: Option<String>,
    /// The resourceVersion of the namespace list the parts came from: the merged list's when
    /// no part had one (every namespace left out of a user's own view), so that a watch can
    /// start from it ("0" cannot be watched from by client-go's RetryWatcher).
    pub(super) fallback_version: Option<String>,
}

pub(super) async fn serve_list(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    parts: Vec<Part>,
    caller: ListCaller<'_>,
) -> Result<Response<ResBody>, ServerError> {
    use futures_util::StreamExt;
    let table = matches!(plan.response, ResponseKind::Table);
    if parts.is_empty() {
        let mut empty = empty_list(plan, table);
        let rv = caller.merged_version.unwrap_or_else(|| "0".to_string());
        empty["metadata"]["resourceVersion"] = Value::String(rv);
        let body = serde_json::to_vec(&empty).map_err(|e| ServerError::Internal(e.to_string()))?;
        return Ok(json_response(body, "application/json"));
    }
    // The parts are fetched FANOUT_CONCURRENCY at a time and come out in namespace order.
    let ctx_for_parts = ctx.clone();
    let (user, groups, accept) = (
        caller.user.to_string(),
        caller.groups.to_vec(),
        caller.accept.to_string(),
    );
    let mut parts = futures_util::stream::iter(parts)
        .map(move |part| {
            let ctx = ctx_for_parts.clone();
            let (user, groups, accept) = (user.clone(), groups.clone(), accept.clone());
            async move { fetch_part(&ctx, &part, &user, &groups, &accept).await }
        })
        .buffered(FANOUT_CONCURRENCY)
        .boxed();
    let mut merger = ListMerger::new(table);
    if let Some(rv) = caller.merged_version {
        merger.set_resource_version(rv);
    }
    if let Some(rv) = caller.fallback_version {
        merger.fallback_resource_version(rv);
    }
    let mut held: Vec<u8> = Vec::new();
    let mut content_type = String::from("application/json");
    // Held back until complete, or until it grows past FANOUT_HOLD_BYTES.
    while held.len() <= FANOUT_HOLD_BYTES {
        let Some(part) = parts.next().await else {
            merger.finish(&mut held);
            return Ok(json_response(held, &content_type));
        };
        let part = part?;
        if !part.status.is_success() {
            // The first refusal answers for the whole request, as a missing cluster-wide
            // grant would.
            return Ok(status_response(part));
        }
        content_type = part.content_type.clone();
        merger.push(&part.doc, &mut held)?;
    }
    // Too big to hold: stream what is held, then each part as it arrives.
    let (tx, rx) = mpsc::channel::<Result<Bytes, BoxError>>(4);
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        if tx.send(Ok(Bytes::from(held))).await.is_err() {
            return;
        }
        loop {
            let next = tokio::select! {
                n = parts.next() => n,
                _ = shutdown.cancelled() => return,
                _ = tx.closed() => return,
            };
            let mut out = Vec::new();
            let step = match next {
                None => {
                    merger.finish(&mut out);
                    let _ = tx.send(Ok(Bytes::from(out))).await;
                    return;
                }
                Some(Ok(part)) if part.status.is_success() => {
                    merger.push(&part.doc, &mut out).map_err(ServerError::from)
                }
                Some(Ok(part)) => Err(ServerError::Forbidden(format!(
                    "a namespace of the cluster-wide list answered {} after the list had started: {}",
                    part.status,
                    String::from_utf8_lossy(&part.doc)
                ))),
                Some(Err(e)) => Err(e),
            };
            match step {
                Ok(()) => {
                    if !out.is_empty() && tx.send(Ok(Bytes::from(out))).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cluster-wide list ended early");
                    // The body ends with an error: the client sees a broken list, never a
                    // short one that looks complete.
                    let _ = tx.send(Err(Box::new(e))).await;
                    return;
                }
            }
        }
    });
    Ok(streamed(rx, &content_type))
}

fn json_response(body: Vec<u8>, content_type: &str) -> Response<ResBody> {
    typed(
        Response::new(paddock_upstream::body::full(body)),
        content_type,
    )
}

/// The list a namespace that is gone, or not yet the tenant's, contributes. It carries no
/// resourceVersion: the merged list takes the smallest of its parts', and a "0" from a part
/// that holds nothing would make the whole list's "0", from which clients cannot watch
/// (client-go's RetryWatcher refuses it: conformance Deployment lifecycle, ResourceQuota
/// status).
fn empty_list(plan: &Plan, table: bool) -> Value {
    if table {
        return serde_json::json!({
            "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
            "columnDefinitions": [{"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}],
            "rows": []
        });
    }
    let (api_version, kind) = match &plan.resource {
        Some(r) => (
            if r.group.is_empty() {
                r.version.clone()
            } else {
                format!("{}/{}", r.group, r.version)
            },
            format!("{}List", r.kind),
        ),
        None => ("v1".to_string(), "List".to_string()),
    };
    serde_json::json!({"kind": kind, "apiVersion": api_version, "metadata": {}, "items": []})
}

/// Is the namespace of this part gone or terminating upstream (asked as paddock itself)?
pub(super) async fn namespace_going(state: &AppState, ctx: &TenantContext, p: &Plan) -> bool {
    let Some(ns) = p.namespace() else {
        return false;
    };
    let path = format!("/api/v1/namespaces/{}", ctx.tenant.upstream_name(ns));
    match paddock_upstream::upjson::call(&state.upstream, Method::GET, &path, None, None).await {
        Ok(a) if a.status == StatusCode::NOT_FOUND => true,
        Ok(a) if a.status.is_success() => !a.body["metadata"]["deletionTimestamp"].is_null(),
        _ => false,
    }
}

/// Where a tenant admin's 403 in one namespace stands with the admins' RoleBinding of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AdminsBinding {
    /// Not a 403, not a tenant admin, not a namespaced part, or upstream did not say.
    NotAsked,
    /// Not in place yet: the namespace was created by a parallel request and listed before
    /// its follow-up bound it.
    Missing,
    /// In place: a refusal can only be the apiserver's authorizer lagging behind it.
    Present,
}

/// For a tenant admin's 403: is the part's namespace's admins' RoleBinding in place? Asked
/// as paddock itself, for the tenant's own upstream name only.
pub(super) async fn admins_binding(
    state: &AppState,
    ctx: &TenantContext,
    p: &Plan,
    groups: &[String],
) -> AdminsBinding {
    let Some(ns) = p.namespace() else {
        return AdminsBinding::NotAsked;
    };
    if !groups
        .iter()
        .any(|g| g == paddock_core::identity::TENANT_ADMIN_GROUP)
    {
        return AdminsBinding::NotAsked;
    }
    let path = format!(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{}/rolebindings/{}",
        ctx.tenant.upstream_name(ns),
        paddock_core::provision::NAMESPACE_ADMIN_BINDING
    );
    match paddock_upstream::upjson::call(&state.upstream, Method::GET, &path, None, None).await {
        Ok(a) if a.status == StatusCode::NOT_FOUND => AdminsBinding::Missing,
        Ok(a) if a.status.is_success() => AdminsBinding::Present,
        _ => AdminsBinding::NotAsked,
    }
}
