//! The plan's actions after upstream answered, before the answer is rewritten: a refusal in a
//! namespace that does not exist, the RBAC mirrors of a changed ClusterRoleBinding or CRD, a
//! self review's answer, a new namespace's setup.

use std::sync::Arc;
use std::task::{Context, Poll};

use http::StatusCode;
use tower::Service;

use super::rewrite::whole_answer;
use super::{FollowedUp, LayerFuture, Planned, Sent, pipeline_layer};
use crate::error::ServerError;
use crate::rewrite::{content_type_of, rewrite_whole};
use crate::state::AppState;

pipeline_layer!(FollowUpLayer, FollowUps);

/// Largest answer read whole to follow it up (a review, a namespace).
const FOLLOW_UP_BYTES: usize = 1 << 20;

impl<S> Service<Planned> for FollowUps<S>
where
    S: Service<Planned, Response = Sent, Error = ServerError>,
    S::Future: Send + 'static,
{
    type Response = FollowedUp;
    type Error = ServerError;
    type Future = LayerFuture<FollowedUp>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServerError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, planned: Planned) -> Self::Future {
        let state = self.state.clone();
        let fut = self.inner.call(planned);
        Box::pin(async move { follow_ups(&state, fut.await?).await })
    }
}

async fn follow_ups(state: &Arc<AppState>, sent: Sent) -> Result<FollowedUp, ServerError> {
    let status = sent.resp.status();
    let (job, actions) = (&sent.job, sent.job.plan.actions);
    let (ctx, plan, caller) = (&job.ctx, &job.plan, &job.caller);
    if status == StatusCode::FORBIDDEN
        && let Some(answer) = crate::absent::answer_if_absent_namespace(
            state,
            ctx,
            plan,
            &caller.user,
            &caller.groups,
        )
        .await?
    {
        // Rights in a namespace come from RoleBindings inside it: in a namespace that does
        // not exist a cluster admin gets an empty list or a NotFound, not a refusal.
        crate::body::drain(sent.resp.into_body()).await;
        return Ok(FollowedUp::Answered(answer));
    }
    if !status.is_success() {
        return Ok(FollowedUp::Upstream(sent));
    }
    if actions.sync_rbac {
        // A ClusterRoleBinding or CRD changed: its namespaced mirrors (and the tenant's
        // custom-resources role) follow before the answer, so the change is usable at once.
        if let Err(e) = crate::rbac_sync::sync_tenant(&state.upstream, &caller.tenant).await {
            tracing::warn!(tenant = %caller.tenant, error = %e, "RBAC mirror sync failed; the periodic resync will retry");
        }
    }
    if actions.self_review {
        return self_review(state, sent).await.map(FollowedUp::Answered);
    }
    if actions.bind_namespace {
        return bind_namespace(state, sent).await.map(FollowedUp::Answered);
    }
    Ok(FollowedUp::Upstream(sent))
}

/// Upstream's answer (JSON, whatever the request's encoding) shows the attributes; it is
/// turned into the answer for the tenant's cluster (reviews.rs).
async fn self_review(
    state: &Arc<AppState>,
    sent: Sent,
) -> Result<http::Response<crate::body::ResBody>, ServerError> {
    let status = sent.resp.status();
    let (job, with) = (&sent.job, &sent.with);
    let raw = state
        .upstream
        .collect_until(sent.resp.into_body(), FOLLOW_UP_BYTES, sent.deadline)
        .await?;
    let raw = crate::reviews::answer_for_tenant(
        state,
        &job.ctx,
        &job.plan,
        &job.caller.user,
        &job.caller.groups,
        with.who,
        with.rules_namespace.as_deref(),
        raw,
    )
    .await?;
    let doc = rewrite_whole(&job.ctx, &job.plan, status, "application/json", &raw)?;
    whole_answer(status, "application/json", doc)
}

/// The tenant's admins get full rights in every namespace of theirs; done before answering
/// so the namespace is usable at once. The name comes from upstream's answer (the request
/// may have used generateName or a protobuf body).
async fn bind_namespace(
    state: &Arc<AppState>,
    sent: Sent,
) -> Result<http::Response<crate::body::ResBody>, ServerError> {
    let status = sent.resp.status();
    let tenant = &sent.job.caller.tenant;
    let ct = content_type_of(&sent.resp);
    let raw = state
        .upstream
        .collect_until(sent.resp.into_body(), FOLLOW_UP_BYTES, sent.deadline)
        .await?;
    if let Some(ns) = serde_json::from_slice::<serde_json::Value>(&raw)
        .ok()
        .and_then(|v| v["metadata"]["name"].as_str().map(str::to_string))
        && ns.starts_with(&tenant.prefix())
    {
        crate::lifecycle::ensure_namespace_binding(&state.upstream, tenant, &ns).await?;
        if let Some(rec) = state.cache.tenant(tenant.as_str())
            && !rec.billing.is_empty()
        {
            crate::billing::stamp_namespace(&state.upstream, &rec.billing, &ns).await?;
        }
    }
    let doc = rewrite_whole(&sent.job.ctx, &sent.job.plan, status, &ct, &raw)?;
    whole_answer(status, &ct, doc)
}
