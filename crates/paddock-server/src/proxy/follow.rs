//! The plan's actions after upstream answered, before the answer is rewritten: a refusal in a
//! namespace that does not exist, the RBAC mirrors of a changed ClusterRoleBinding or CRD, a
//! self review's answer, a new namespace's setup.

use std::future::Future;

use http::{Response, StatusCode};
use paddock_upstream::answer_body::AnswerBody;

use super::new_crd::NewCrd;
use super::rewrite::whole_answer;
use super::{FollowedUp, Job, Planned, Sent, Step, pipeline_layer};
use crate::proxy::whole::{content_type_of, rewrite_whole};
use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::rare::boxed;
use paddock_upstream::res_body::ResBody;

pipeline_layer!(FollowUpLayer, FollowUps);

/// Largest answer read whole to follow it up (a review, a namespace).
const FOLLOW_UP_BYTES: usize = 1 << 20;

/// What the follow-ups ask of the replica: each action of the plan, carried out.
pub trait FollowingUp: Send + Sync + 'static {
    /// A cluster admin's answer to a refusal in a namespace that does not exist, if it does
    /// not.
    fn absent_namespace(
        &self,
        job: &Job,
    ) -> impl Future<Output = Result<Option<Response<ResBody>>, ServerError>> + Send;
    /// The tenant's RBAC mirrors brought in step (failures are logged: the periodic resync
    /// retries); after a CRD's create, until its admins may use its resources (bounded).
    fn sync_rbac(&self, job: &Job, new_crd: Option<&NewCrd>) -> impl Future<Output = ()> + Send;
    /// A self review's answer for the tenant's cluster.
    fn self_review(
        &self,
        sent: Sent,
    ) -> impl Future<Output = Result<Response<ResBody>, ServerError>> + Send;
    /// A new namespace's binding (and billing stamp), then its answer.
    fn bind_namespace(
        &self,
        sent: Sent,
    ) -> impl Future<Output = Result<Response<ResBody>, ServerError>> + Send;
    /// After a 404 of a GET of a FlowSchema or PriorityLevelConfiguration: upstream's answer
    /// for the platform's object of that name (`path`, core's `platform_object_path`), read as
    /// the request's own identity, if it is the platform's; None otherwise.
    fn platform_object(
        &self,
        sent: &Sent,
        path: &str,
    ) -> impl Future<Output = Result<Option<Response<AnswerBody>>, ServerError>> + Send;
}

impl FollowingUp for AppState {
    async fn absent_namespace(&self, job: &Job) -> Result<Option<Response<ResBody>>, ServerError> {
        let c = &job.caller;
        crate::proxy::absent::answer_if_absent_namespace(
            self, &job.ctx, &job.plan, &c.user, &c.groups,
        )
        .await
    }
    async fn sync_rbac(&self, job: &Job, new_crd: Option<&NewCrd>) {
        let tenant = &job.caller.tenant;
        if let Err(e) = paddock_reconciler::rbac_sync::sync_tenant(&self.upstream, tenant).await {
            tracing::warn!(tenant = %tenant, error = %e, "RBAC mirror sync failed; the periodic resync will retry");
        }
        if let Some(crd) = new_crd {
            crate::proxy::new_crd::wait_for_grant(self, job, crd).await;
        }
    }
    async fn self_review(&self, sent: Sent) -> Result<Response<ResBody>, ServerError> {
        self_review(self, sent).await
    }
    async fn bind_namespace(&self, sent: Sent) -> Result<Response<ResBody>, ServerError> {
        bind_namespace(self, sent).await
    }
    async fn platform_object(
        &self,
        sent: &Sent,
        path: &str,
    ) -> Result<Option<Response<AnswerBody>>, ServerError> {
        super::follow_platform::platform_object(self, sent, path).await
    }
}

impl<S, P, B> Step<Planned<B>> for FollowUps<'_, S, P>
where
    P: FollowingUp,
    B: Send,
    S: Step<Planned<B>, Response = Sent>,
{
    type Response = FollowedUp;

    async fn run(&self, planned: Planned<B>) -> Result<FollowedUp, ServerError> {
        let sent = self.inner.run(planned).await?;
        follow_ups(&**self.state, sent).await
    }
}

/// The plan's actions after upstream answered. Each action is a rare branch with a large
/// future of its own (upstream requests): boxed, so that a request without one does not
/// carry their state.
async fn follow_ups<P: FollowingUp>(state: &P, sent: Sent) -> Result<FollowedUp, ServerError> {
    let status = sent.resp.status();
    let actions = sent.job.plan.actions;
    if status == StatusCode::FORBIDDEN
        && let Some(answer) = boxed(|| state.absent_namespace(&sent.job)).await?
    {
        // Rights in a namespace come from RoleBindings inside it: in a namespace that does
        // not exist a cluster admin gets an empty list or a NotFound, not a refusal.
        paddock_upstream::body::drain(sent.resp.into_body()).await;
        return Ok(FollowedUp::Answered(answer));
    }
    if status == StatusCode::NOT_FOUND
        && let Some(path) =
            paddock_core::request::platform_get::platform_object_path(&sent.job.plan)
        && let Some(resp) = state.platform_object(&sent, &path).await?
    {
        let missed = sent.resp;
        paddock_upstream::body::drain(missed.into_body()).await;
        if paddock_core::request::platform_get::is_write(&sent.job.plan) {
            // The tenant has no object of that name, the platform has: a refusal that says
            // so, not a NotFound for an object the tenant can see.
            paddock_upstream::body::drain(resp.into_body()).await;
            let msg = paddock_core::request::platform_get::refusal_message(&sent.job.plan);
            return Ok(FollowedUp::Answered(
                paddock_upstream::error::status_response(403, "Forbidden", &msg),
            ));
        }
        // The list shows the platform's `exempt` beside the tenant's own: so does a GET.
        return Ok(FollowedUp::Upstream(Sent { resp, ..sent }));
    }
    if !status.is_success() {
        return Ok(FollowedUp::Upstream(sent));
    }
    if actions.sync_rbac {
        // A ClusterRoleBinding or CRD changed: its namespaced mirrors (and the tenant's
        // custom-resources role) follow before the answer, so the change is usable at once.
        boxed(|| state.sync_rbac(&sent.job, sent.with.new_crd.as_deref())).await;
    }
    if actions.self_review {
        return boxed(|| state.self_review(sent))
            .await
            .map(FollowedUp::Answered);
    }
    if actions.bind_namespace {
        return boxed(|| state.bind_namespace(sent))
            .await
            .map(FollowedUp::Answered);
    }
    Ok(FollowedUp::Upstream(sent))
}

/// Upstream's answer (JSON, whatever the request's encoding) shows the attributes; it is
/// turned into the answer for the tenant's cluster (reviews.rs).
async fn self_review(state: &AppState, sent: Sent) -> Result<Response<ResBody>, ServerError> {
    let status = sent.resp.status();
    let (job, with) = (&sent.job, &sent.with);
    let raw = state
        .upstream
        .collect_until(sent.resp.into_body(), FOLLOW_UP_BYTES, sent.deadline)
        .await?;
    let raw = crate::proxy::reviews::answer_for_tenant(
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
async fn bind_namespace(state: &AppState, sent: Sent) -> Result<Response<ResBody>, ServerError> {
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
        paddock_reconciler::lifecycle::ensure_namespace_binding(&state.upstream, tenant, &ns)
            .await?;
        if let Some(rec) = state.cache.tenant(tenant.as_str())
            && !rec.billing.is_empty()
        {
            paddock_reconciler::billing::stamp_namespace(&state.upstream, &rec.billing, &ns)
                .await?;
        }
    }
    let doc = rewrite_whole(&sent.job.ctx, &sent.job.plan, status, &ct, &raw)?;
    whole_answer(status, &ct, doc)
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;
