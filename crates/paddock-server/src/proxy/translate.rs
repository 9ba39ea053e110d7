//! The upstream request: translated path, forwarded headers, the translated body, and the
//! upstream identity the plan calls for (the shadow of a self access review decided once its
//! body is translated).

use std::future::Future;

use bytes::Bytes;
use http::header::{self, HeaderMap};
use http::{Method, Request, Uri};
use paddock_core::admission::policy::PodSecurityLevel;
use paddock_core::{Plan, TenantId, Verb};

use super::{Job, Outbound, Planned, Sent, SentWith, Step, pipeline_layer};
use crate::clusters::span_write::Replay;
use crate::proxy::outbound::{add_impersonation_as, copy_request_headers, header_value};
use crate::proxy::whole::parts_content_type;
use crate::state::AppState;
use paddock_upstream::body::UpBody;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::rare::boxed;

pipeline_layer!(TranslateLayer, Translate);

/// Room in an upstream request's header map: a few forwarded headers, Accept, and the
/// impersonation headers (the user, its groups, the tenant's groups).
const UPSTREAM_HEADERS: usize = 16;

/// What building the upstream request asks of the replica.
pub trait Translating: Send + Sync + 'static {
    /// The upstream URI of a path and query.
    fn upstream_uri(&self, path_and_query: &str) -> Result<Uri, ServerError>;
    /// The largest request body read.
    fn max_body_bytes(&self) -> usize;
    /// The tenant's pod-security level (its policy, or the configured default).
    fn pod_security(&self, tenant: &TenantId) -> PodSecurityLevel;
    /// Admits a namespace's creation under the tenant's quota (or refuses it).
    fn admit_namespace_create(
        &self,
        tenant: &TenantId,
        translated: &[u8],
        content_type: &str,
        dry_run: bool,
    ) -> impl Future<Output = Result<(), ServerError>> + Send;
    /// A cluster-scoped write of a tenant spanning clusters, to replay on its other clusters
    /// once the home accepted it (`None` for everything else).
    fn replay_of(
        &self,
        tenant: &TenantId,
        plan: &Plan,
        method: &Method,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Option<Replay>;
}

impl Translating for AppState {
    fn upstream_uri(&self, path_and_query: &str) -> Result<Uri, ServerError> {
        self.upstream.uri(path_and_query)
    }
    fn max_body_bytes(&self) -> usize {
        self.config.max_body_bytes
    }
    fn pod_security(&self, tenant: &TenantId) -> PodSecurityLevel {
        let record = self.cache.tenant(tenant.as_str());
        let policy = record.as_ref().and_then(|r| r.policy.as_ref());
        policy.unwrap_or(&self.config.default_policy).pod_security
    }
    async fn admit_namespace_create(
        &self,
        tenant: &TenantId,
        translated: &[u8],
        content_type: &str,
        dry_run: bool,
    ) -> Result<(), ServerError> {
        crate::webhook::quota::admit_namespace_create(
            self,
            tenant,
            translated,
            content_type,
            dry_run,
        )
        .await
    }
    fn replay_of(
        &self,
        tenant: &TenantId,
        plan: &Plan,
        method: &Method,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Option<Replay> {
        crate::clusters::span_write::replay_of(self, tenant, plan, method, headers, body)
    }
}

impl<S, P, B> Step<Planned<B>> for Translate<'_, S, P>
where
    P: Translating,
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display + Send,
    S: Step<Outbound, Response = Sent>,
{
    type Response = Sent;

    async fn run(&self, planned: Planned<B>) -> Result<Sent, ServerError> {
        let outbound = upstream_request(&**self.state, planned).await?;
        self.inner.run(outbound).await
    }
}

async fn upstream_request<P, B>(state: &P, planned: Planned<B>) -> Result<Outbound, ServerError>
where
    P: Translating,
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display + Send,
{
    let Planned { job, req } = planned;
    let plan = &job.plan;
    let (parts, body) = req.into_parts();
    let mut up = Request::builder()
        .method(parts.method.clone())
        .uri(state.upstream_uri(&plan.upstream_path_and_query)?);
    let headers = up
        .headers_mut()
        .ok_or_else(|| ServerError::Internal("request builder".into()))?;
    // Sized for the forwarded headers and the impersonation ones: the map is allocated once
    // instead of growing on the way.
    *headers = HeaderMap::with_capacity(UPSTREAM_HEADERS);
    copy_request_headers(&parts.headers, headers, plan.upgrade);
    // Upgrades (exec, attach, port-forward) get an Accept only if the client sent one: the
    // apiserver hands the request's headers on to the kubelet, whose go-restful routes answer
    // an Accept they do not produce with 406 (kwok does; kubectl sends none).
    let accept = job.accept.as_deref();
    if !plan.upgrade || accept.is_some() {
        headers.insert(
            header::ACCEPT,
            header_value(&paddock_core::upstream_accept(accept))?,
        );
    }
    let mut sent = SentWith {
        who: plan.identity.resolve(None),
        rules_namespace: None,
        client_upgrade: None,
        new_crd: None,
    };
    // A spanning tenant's cluster-scoped write is replayed on its other clusters.
    let mut replay_body = Bytes::new();
    let up_body: UpBody = if plan.needs_body_translation {
        // A namespace create of a spanning tenant was read by the router (clusters/span.rs).
        let raw = match parts.extensions.get::<crate::clusters::span::PreRead>() {
            Some(pre) => pre.0.clone(),
            None => collect_limited(body, state.max_body_bytes()).await?,
        };
        if let Some(slot) = parts.extensions.get::<crate::observe::audit::AuditBody>() {
            let _ = slot.0.set(raw.clone());
        }
        let translated =
            translated_body(state, &job, &parts.headers, headers, &raw, &mut sent).await?;
        replay_body = translated.clone();
        paddock_upstream::body::full_up(translated)
    } else if plan.upgrade {
        let mut client_req = Request::from_parts(parts, body);
        sent.client_upgrade = Some(hyper::upgrade::on(&mut client_req));
        paddock_upstream::body::empty_up()
    } else {
        plain_body(state.max_body_bytes(), body, headers).await?
    };
    let c = &job.caller;
    add_impersonation_as(headers, &c.tenant, &c.user, &c.groups, sent.who)?;
    if plan.asserts_platform_grant(&c.groups) {
        let g = paddock_core::catalog::platform_grant::grant_group(&c.tenant);
        headers.append(
            "impersonate-group",
            crate::proxy::outbound::header_value(&g)?,
        );
    }
    if plan.actions.namespace_write && state.pod_security(&c.tenant) == PodSecurityLevel::Privileged
    {
        let g = paddock_core::admission::podsecurity::privileged_group(&c.tenant);
        headers.append(
            "impersonate-group",
            crate::proxy::outbound::header_value(&g)?,
        );
    }
    let mut request = up
        .body(up_body)
        .map_err(|e| ServerError::Internal(format!("building upstream request: {e}")))?;
    let replay = state.replay_of(
        &c.tenant,
        plan,
        &request.method().clone(),
        request.headers(),
        replay_body,
    );
    if let Some(r) = replay {
        request.extensions_mut().insert(r);
    }
    Ok(Outbound { job, request, sent })
}

/// A write's body translated (JSON, patches, apply YAML, protobuf), with the plan's actions
/// before sending: a namespace's pod-security label held, its creation admitted under the
/// tenant quota, a self review normalised.
async fn translated_body<P: Translating>(
    state: &P,
    job: &Job,
    client_headers: &HeaderMap,
    headers: &mut HeaderMap,
    raw: &Bytes,
    sent: &mut SentWith,
) -> Result<Bytes, ServerError> {
    let (ctx, plan) = (&job.ctx, &job.plan);
    let content_type = client_headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let (mut translated, up_ct) =
        paddock_core::translate_request_body(ctx, plan, content_type, raw)?;
    if plan.actions.lock_namespace_labels {
        let level = state.pod_security(&ctx.tenant);
        translated =
            paddock_reconciler::provision::lock_namespace_labels(translated, &up_ct, level)?;
    }
    if plan.actions.admit_namespace_quota {
        let dry_run = plan.upstream_path_and_query.contains("dryRun=");
        // A namespace create only: boxed, out of every other write's future.
        boxed(|| state.admit_namespace_create(&ctx.tenant, &translated, &up_ct, dry_run)).await?;
    }
    if plan.actions.self_review {
        translated = crate::proxy::reviews::normalize_self_review(ctx, plan, translated);
        sent.rules_namespace = paddock_core::identity::review::rules_review_namespace(&translated);
    }
    if plan.actions.sync_rbac
        && plan.resource.as_ref().is_some_and(|i| i.is_crd())
        && matches!(plan.request.verb, Verb::Create | Verb::Patch)
        && !plan.upstream_path_and_query.contains("dryRun=")
    {
        sent.new_crd = crate::proxy::new_crd::NewCrd::of_body(&translated).map(Box::new);
    }
    sent.who = plan.identity.resolve(Some(&translated));
    headers.insert(header::CONTENT_TYPE, header_value(&up_ct)?);
    Ok(Bytes::from(translated))
}

/// Requests without a body to translate (GET, DELETE without options, CONNECT): the body, if
/// any (DeleteOptions), is small and carries no names.
async fn plain_body<B>(
    max_body_bytes: usize,
    body: B,
    headers: &mut HeaderMap,
) -> Result<UpBody, ServerError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display + Send,
{
    let raw = collect_limited(body, max_body_bytes).await?;
    if raw.is_empty() {
        return Ok(paddock_upstream::body::empty_up());
    }
    if let Some(ct) = parts_content_type(headers) {
        headers.insert(header::CONTENT_TYPE, ct);
    }
    Ok(paddock_upstream::body::full_up(raw))
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;
