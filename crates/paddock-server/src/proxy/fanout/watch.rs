//! A cluster-wide watch: one watch per tenant namespace multiplexed onto one stream, and a
//! watch added for each namespace created while it is open.

use super::*;

/// How often a watch of a namespace created after the fan-out watch started is retried when
/// upstream refuses it (the namespace's RoleBinding is written just after the namespace).
const NEW_NAMESPACE_WATCH_ATTEMPTS: u32 = 10;
const NEW_NAMESPACE_WATCH_BACKOFF: std::time::Duration = std::time::Duration::from_millis(200);

/// What the parts of a fan-out watch share.
#[derive(Clone)]
struct WatchShared {
    state: Arc<AppState>,
    ctx: TenantContext,
    user: String,
    groups: Vec<String>,
    /// Accept sent upstream.
    accept: String,
    /// The client's own Accept (decides Table or not for new namespaces' parts).
    client_accept: Option<String>,
    tx: mpsc::Sender<Result<Bytes, BoxError>>,
    /// Cancelled when any part ends: the whole stream then ends and the client watches again
    /// from the last resourceVersion it saw. A part that ended alone would silently stop
    /// the events of its namespace.
    end: tokio_util::sync::CancellationToken,
    guard: Arc<crate::observe::metrics::WatchGuard>,
}

/// Opens one namespace's watch; a refusal comes back as the rewritten Status.
async fn open_part(sh: &WatchShared, part: &Part) -> Result<Opened, ServerError> {
    let p = &part.plan;
    let (resp, slot) = send_one(
        &part.state,
        p,
        &sh.ctx.tenant,
        &sh.user,
        &sh.groups,
        &sh.accept,
        true,
    )
    .await
    .map_err(|e| part.unreachable(&sh.ctx, e))?;
    let status = resp.status();
    if status.is_success() {
        let slot =
            slot.ok_or_else(|| ServerError::Internal("watch without a stream slot".into()))?;
        return Ok(Ok((resp, slot)));
    }
    let ct = content_type_of(&resp);
    let raw = collect_limited(resp.into_body(), 1 << 20).await?;
    let doc = rewrite_whole(&sh.ctx, p, status, &ct, &raw)?;
    Ok(Err(ListPart {
        status,
        content_type: ct,
        doc,
    }))
}

/// Opens one namespace's watch as the fan-out starts. A tenant admin's 403 in a namespace
/// whose admins' RoleBinding is missing (created a moment ago by another request, its
/// follow-up still binding it) or present (the apiserver's RBAC cache not yet caught up) is
/// asked again, as the watch of a namespace created later is: a cluster admin's watch is never
/// refused there. Leaving the namespace out instead (as a list may, the namespace holding
/// nothing yet) would lose the events that follow. Any other refusal stands at once.
async fn open_first_part(sh: &WatchShared, part: &Part) -> Result<Opened, ServerError> {
    let mut attempt = 1;
    loop {
        let opened = open_part(sh, part).await?;
        let refused_admin = match &opened {
            Err(refusal) if refusal.status == StatusCode::FORBIDDEN => {
                super::list::admins_binding(&part.state, &sh.ctx, &part.plan, &sh.groups).await
                    != super::list::AdminsBinding::NotAsked
            }
            _ => false,
        };
        if !refused_admin || attempt >= NEW_NAMESPACE_WATCH_ATTEMPTS {
            return Ok(opened);
        }
        tracing::debug!(attempt, namespace = ?part.plan.namespace(), "cluster-wide watch: a tenant admin refused in a namespace being bound; asking again");
        attempt += 1;
        tokio::time::sleep(NEW_NAMESPACE_WATCH_BACKOFF).await;
    }
}

/// A namespace's watch opened, or the refusal rewritten for the tenant.
type Opened = Result<
    (
        Response<paddock_upstream::answer_body::AnswerBody>,
        paddock_upstream::upstream::StreamSlot,
    ),
    ListPart,
>;

/// Forwards one namespace's events, rewritten, until it ends, the client goes, or the whole
/// fan-out ends. Its end ends the whole fan-out (see [`WatchShared::end`]).
fn spawn_part(
    sh: WatchShared,
    part: Part,
    resp: Response<paddock_upstream::answer_body::AnswerBody>,
    slot: paddock_upstream::upstream::StreamSlot,
) {
    let ct = content_type_of(&resp);
    let mut rw = paddock_core::response_rewriter(&sh.ctx, &part.plan, resp.status().as_u16(), &ct);
    // The part's upstream lost (health.rs) or this part's stream broken: the whole watch
    // ends with an ERROR event, as a namespaced watch does (proxy.rs), not with a reset stream.
    let lost = part.state.health.lost_token();
    tokio::spawn(async move {
        let _guard = sh.guard.clone();
        let _slot = slot;
        let mut body = resp.into_body();
        let mut interrupted = false;
        loop {
            let frame = tokio::select! {
                f = body.frame() => f,
                _ = sh.state.shutdown.cancelled() => break,
                _ = sh.end.cancelled() => break,
                _ = sh.tx.closed() => break,
                _ = lost.cancelled() => { interrupted = true; break }
            };
            let frame = match frame {
                Some(Ok(f)) => f,
                Some(Err(_)) => {
                    interrupted = true;
                    break;
                }
                None => break,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let mut out = Vec::new();
            if let Err(e) = rw.feed(&data, &mut out) {
                let _ = sh.tx.send(Err(Box::new(e))).await;
                break;
            }
            if !out.is_empty() && sh.tx.send(Ok(Bytes::from(out))).await.is_err() {
                break;
            }
        }
        // The first part to notice sends the event; the others see the end and stop.
        if interrupted && !sh.end.is_cancelled() {
            sh.end.cancel();
            let _ = sh
                .tx
                .send(Ok(paddock_upstream::error::watch_interrupted_event()))
                .await;
        }
        sh.end.cancel();
    });
}

/// Who asks for a fan-out watch, and in what form.
pub(super) struct WatchCaller<'a> {
    pub(super) user: &'a str,
    pub(super) groups: &'a [String],
    pub(super) upstream_accept: &'a str,
    pub(super) client_accept: Option<&'a str>,
}

pub(super) async fn serve_watch(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    listed: Vec<(Arc<AppState>, TenantNamespaces)>,
    parts: Vec<Part>,
    caller: WatchCaller<'_>,
) -> Result<Response<ResBody>, ServerError> {
    use futures_util::StreamExt;
    let (tx, rx) = mpsc::channel::<Result<Bytes, BoxError>>(64);
    let sh = WatchShared {
        state: state.clone(),
        ctx: ctx.clone(),
        user: caller.user.to_string(),
        groups: caller.groups.to_vec(),
        accept: caller.upstream_accept.to_string(),
        client_accept: caller.client_accept.map(str::to_string),
        tx,
        end: state.shutdown.child_token(),
        guard: Arc::new(crate::observe::metrics::WatchGuard::open(
            state.metrics.clone(),
        )),
    };
    // The namespaces' watches are opened FANOUT_CONCURRENCY at a time; the first refusal
    // answers for the whole request.
    let opened: Vec<_> = futures_util::stream::iter(parts)
        .map(|p| {
            let sh = sh.clone();
            async move { open_first_part(&sh, &p).await.map(|r| (p, r)) }
        })
        .buffered(FANOUT_CONCURRENCY)
        .collect()
        .await;
    let mut content_type = String::from("application/json");
    let mut ready = Vec::with_capacity(opened.len());
    for o in opened {
        match o {
            Err(e) => {
                sh.end.cancel();
                return Err(e);
            }
            // Deleted (or terminating, its RoleBindings going first) after the namespaces were
            // listed: a cluster admin's watch would simply not show it any more.
            // Not the user's: left out of the user's own view (docs/security.md "Each user's
            // own view"); a tenant admin's refusal answers for the whole, as before.
            Ok((p, Err(refusal)))
                if refusal.status == StatusCode::FORBIDDEN
                    && !paddock_core::identity::is_tenant_admin(&sh.groups) =>
            {
                tracing::debug!(namespace = ?p.plan.namespace(), "cluster-wide watch: not the user's namespace; left out");
            }
            Ok((p, Err(refusal)))
                if matches!(
                    refusal.status,
                    StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
                ) && super::list::namespace_going(&p.state, ctx, &p.plan).await =>
            {
                tracing::debug!(namespace = ?p.plan.namespace(), "cluster-wide watch: a namespace went while it was opened; left out");
            }
            Ok((_, Err(refusal))) => {
                sh.end.cancel();
                return Ok(status_response(refusal));
            }
            Ok((p, Ok((resp, slot)))) => {
                content_type = content_type_of(&resp);
                ready.push((p, resp, slot));
            }
        }
    }
    for (p, resp, slot) in ready {
        spawn_part(sh.clone(), p, resp, slot);
    }
    // Namespaces the tenant creates while the watch runs join it (on each of its clusters).
    for (cluster, listed) in listed {
        tokio::spawn(follow_new_namespaces(
            sh.clone(),
            cluster,
            plan.clone(),
            listed,
        ));
    }
    drop(sh);
    Ok(streamed(rx, &content_type))
}

/// Watches the tenant's namespaces upstream (paddock's own credential, label-selected, from
/// the resourceVersion of the list the fan-out started from) and adds a part for each
/// namespace created since, watched from the namespace's own resourceVersion so that nothing
/// created in it is missed. If that fails, or the namespace watch ends, the whole fan-out
/// ends and the client watches again (and lists, if it must).
async fn follow_new_namespaces(
    sh: WatchShared,
    cluster: Arc<AppState>,
    plan: Plan,
    listed: TenantNamespaces,
) {
    let result = follow_inner(&sh, &cluster, &plan, listed).await;
    if let Err(e) = result {
        tracing::warn!(tenant = %sh.ctx.tenant, error = %e, "cluster-wide watch: following new namespaces failed; ending the watch");
    }
    sh.end.cancel();
}

async fn follow_inner(
    sh: &WatchShared,
    cluster: &Arc<AppState>,
    plan: &Plan,
    listed: TenantNamespaces,
) -> Result<(), ServerError> {
    let path = format!(
        "/api/v1/namespaces?watch=true&allowWatchBookmarks=true&labelSelector={}&resourceVersion={}",
        query_escape(&sh.ctx.tenant.tenant_label_selector()),
        query_escape(&listed.resource_version)
    );
    let req = Request::builder()
        .method(Method::GET)
        .uri(cluster.upstream.uri(&path)?)
        .header(header::ACCEPT, "application/json")
        .body(paddock_upstream::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let (resp, _slot) = cluster.upstream.send_watch(req).await?;
    if !resp.status().is_success() {
        return Err(ServerError::Upstream(format!(
            "watching the tenant's namespaces upstream: {}",
            resp.status()
        )));
    }
    let mut known: std::collections::HashSet<String> = listed.names.into_iter().collect();
    let prefix = sh.ctx.tenant.prefix();
    let mut body = resp.into_body();
    let mut line: Vec<u8> = Vec::new();
    loop {
        let frame = tokio::select! {
            f = body.frame() => f,
            _ = sh.end.cancelled() => return Ok(()),
            _ = sh.tx.closed() => return Ok(()),
        };
        let Some(frame) = frame else {
            return Ok(());
        };
        let frame = frame.map_err(|e| ServerError::Upstream(format!("namespace watch: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        line.extend_from_slice(&data);
        if line.len() > MAX_NAMESPACE_EVENT_BYTES {
            return Err(ServerError::Upstream(
                "namespace watch event too large".into(),
            ));
        }
        while let Some(nl) = line.iter().position(|&b| b == b'\n') {
            let event: Vec<u8> = line.drain(..=nl).collect();
            let v: Value = serde_json::from_slice(&event)
                .map_err(|e| ServerError::Upstream(format!("namespace watch event: {e}")))?;
            match v["type"].as_str() {
                Some("ADDED") => {}
                Some("ERROR") => {
                    return Err(ServerError::Upstream(format!(
                        "namespace watch: {}",
                        v["object"]["message"].as_str().unwrap_or("error event")
                    )));
                }
                _ => continue,
            }
            let meta = &v["object"]["metadata"];
            let (Some(up_ns), Some(rv)) = (meta["name"].as_str(), meta["resourceVersion"].as_str())
            else {
                continue;
            };
            if !up_ns.starts_with(&prefix) || !known.insert(up_ns.to_string()) {
                continue;
            }
            let Some(ns) = sh.ctx.tenant.strip(up_ns) else {
                continue;
            };
            let part = Part {
                state: cluster.clone(),
                plan: part_plan(&sh.ctx, plan, ns, Some(rv), sh.client_accept.as_deref())?,
                cluster: None,
            };
            add_new_part(sh, part).await?;
        }
    }
}

/// Largest namespace watch event paddock reads.
const MAX_NAMESPACE_EVENT_BYTES: usize = 4 << 20;

async fn add_new_part(sh: &WatchShared, p: Part) -> Result<(), ServerError> {
    for attempt in 1..=NEW_NAMESPACE_WATCH_ATTEMPTS {
        match open_part(sh, &p).await? {
            Ok((resp, slot)) => {
                spawn_part(sh.clone(), p, resp, slot);
                return Ok(());
            }
            Err(refusal) if attempt < NEW_NAMESPACE_WATCH_ATTEMPTS => {
                tracing::debug!(status = %refusal.status, attempt, "watch of a new namespace refused; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(NEW_NAMESPACE_WATCH_BACKOFF) => {}
                    _ = sh.end.cancelled() => return Ok(()),
                }
            }
            // Created and deleted again while the watch retried: nothing to follow.
            Err(_) if super::list::namespace_going(&p.state, &sh.ctx, &p.plan).await => {
                return Ok(());
            }
            // Not the user's (its rights there were given neither with the namespace nor by
            // the mirrors of the tenant's ClusterRoleBindings): left out of the user's view.
            Err(refusal)
                if refusal.status == StatusCode::FORBIDDEN
                    && !paddock_core::identity::is_tenant_admin(&sh.groups) =>
            {
                return Ok(());
            }
            Err(refusal) => {
                return Err(ServerError::Upstream(format!(
                    "watch of a new namespace refused: {}",
                    refusal.status
                )));
            }
        }
    }
    Ok(())
}
