//! The tenant pipeline: a stack of tower layers, one step each (outermost first):
//!
//! | layer | module | what it does |
//! |---|---|---|
//! | plan, catalog retry | [`plan`] | `kubectl --as`, parse and plan (paddock-core); a 404 re-reads discovery once (a CRD just created); a refused write to an absent shared object is its NotFound |
//! | fan-out | [`fan_out`] | a namespaced kind read across all namespaces goes to `fanout` instead |
//! | response rewrite | [`rewrite`] | the answer rewritten for the tenant: whole, streamed, or spliced (upgrades) |
//! | follow-ups | [`follow`] | the plan's actions after upstream answered: absent namespace, RBAC mirrors, self reviews, a new namespace's setup |
//! | body translation | [`translate`] | the upstream request: headers, translated body, upstream identity |
//! | send | [`send`] | through the pool of the plan's route |
//!
//! Every decision is the plan's (`paddock_core::Plan`: route, identity, actions); the layers
//! execute it.

pub mod absent;
pub mod fan_out;
pub mod fanout;
pub mod follow;
mod follow_platform;
pub mod impersonate;
pub mod new_crd;
pub mod outbound;
pub mod plan;
pub mod reviews;
pub mod rewrite;
pub mod send;
pub mod translate;
pub mod views;
pub mod whole;

use std::future::Future;
use std::sync::Arc;

use crate::body::ReqBody;
use http::{Request, Response};
use paddock_core::identity::As;
use paddock_core::{Plan, TenantContext, TenantId};
use paddock_upstream::answer_body::AnswerBody;
use tower::Layer;

use crate::state::AppState;
use paddock_upstream::body::UpBody;
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::upstream::StreamSlot;

pub use plan::Planning;

/// The tenant user a request is served for (after `kubectl --as`).
#[derive(Debug, Clone)]
pub struct TenantUser {
    pub tenant: TenantId,
    /// Shared with the caller it comes from (a copy per request is a reference count).
    pub user: Arc<str>,
    pub groups: Arc<[String]>,
}

/// A planned tenant request: what every layer below the planning knows of it.
pub struct Job {
    pub ctx: TenantContext,
    pub plan: Plan,
    pub caller: TenantUser,
    /// The client's Accept and If-None-Match headers.
    pub accept: Option<String>,
    pub if_none_match: Option<String>,
}

/// A planned request on its way down the stack.
pub struct Planned<B = ReqBody> {
    pub job: Arc<Job>,
    pub req: Request<B>,
}

/// The upstream request, and what building it decided for the steps after sending.
pub struct Outbound {
    pub job: Arc<Job>,
    pub request: Request<UpBody>,
    pub sent: SentWith,
}

/// What travels with a request to upstream and back with its answer.
pub struct SentWith {
    /// The upstream identity it carries.
    pub who: As,
    /// The namespace of a SelfSubjectRulesReview (its answer is rewritten for the tenant).
    pub rules_namespace: Option<String>,
    /// The client side of an upgrade (exec, attach, port-forward).
    pub client_upgrade: Option<hyper::upgrade::OnUpgrade>,
    /// A CRD the request creates (not a dry run): the follow-up waits until the tenant's
    /// admins may use its resources (`new_crd`).
    pub new_crd: Option<Box<new_crd::NewCrd>>,
}

/// Upstream's answer.
pub struct Sent {
    pub job: Arc<Job>,
    pub resp: Response<AnswerBody>,
    /// A watch's stream slot, held as long as the answer's body.
    pub slot: Option<StreamSlot>,
    /// Short requests are bounded as a whole (headers and a body read whole) by
    /// `upstream_timeout`; watches and other long-running requests only until their headers.
    pub deadline: tokio::time::Instant,
    pub with: SentWith,
}

/// After the follow-ups: answered already, or upstream's answer to rewrite.
pub enum FollowedUp {
    Answered(Response<ResBody>),
    Upstream(Sent),
}

/// Serves one tenant request through the pipeline's layers; the verb is the plan's.
pub async fn serve_tenant(
    state: &Arc<AppState>,
    tenant: &TenantId,
    user: &Arc<str>,
    groups: &Arc<[String]>,
    req: Request<ReqBody>,
) -> Result<(Response<ResBody>, &'static str), ServerError> {
    let caller = TenantUser {
        tenant: tenant.clone(),
        user: user.clone(),
        groups: groups.clone(),
    };
    // The steps borrow the replica's state for the request: no reference count touched per
    // step (a shared counter, written from every worker thread, per clone and drop).
    let svc = plan::PlanLayer::new(state).layer(
        fan_out::FanOutLayer::new(state).layer(
            rewrite::RewriteLayer::new(state).layer(
                follow::FollowUpLayer::new(state)
                    .layer(translate::TranslateLayer::new(state).layer(send::Send::new(state))),
            ),
        ),
    );
    svc.run((caller, req)).await
}

/// One step of the pipeline over the steps below it. Not a `tower::Service`: a service's
/// future must be a nameable type, which an `async` block is not on stable Rust, so each
/// layer boxed its future (an allocation and a move of the whole state machine per layer and
/// request, the growth of `memmove` and malloc the profile showed). `run` is an `async fn`
/// in a trait: the steps' futures nest into one state machine, allocated once by the
/// connection's task. Only rare, large branches (fan-out, follow-up writes) box their own.
pub trait Step<Req>: std::marker::Send + Sync {
    type Response;
    fn run(
        &self,
        req: Req,
    ) -> impl Future<Output = Result<Self::Response, ServerError>> + std::marker::Send;
}

/// A closure as the innermost step (the steps' unit tests).
#[derive(Clone)]
pub struct StepFn<F>(pub F);

/// See [`StepFn`].
pub fn step_fn<F>(f: F) -> StepFn<F> {
    StepFn(f)
}

impl<F, Req, Fut, T> Step<Req> for StepFn<F>
where
    F: Fn(Req) -> Fut + std::marker::Send + Sync,
    Fut: Future<Output = Result<T, ServerError>> + std::marker::Send,
{
    type Response = T;
    fn run(&self, req: Req) -> impl Future<Output = Result<T, ServerError>> + std::marker::Send {
        (self.0)(req)
    }
}

/// Implements `tower::Layer` for a pipeline layer `$layer<S, P>` holding what the step asks
/// of the replica: `P` is the replica's state in production ([`AppState`]), a fake in the
/// step's unit tests; each step names what it needs as a small port trait.
macro_rules! pipeline_layer {
    ($layer_name:ident, $service:ident) => {
        /// The tower layer of the step (see the module).
        pub struct $layer_name<'a, P = crate::state::AppState> {
            state: &'a std::sync::Arc<P>,
        }

        impl<'a, P> $layer_name<'a, P> {
            pub fn new(state: &'a std::sync::Arc<P>) -> Self {
                $layer_name { state }
            }
        }

        impl<P> Clone for $layer_name<'_, P> {
            fn clone(&self) -> Self {
                $layer_name { state: self.state }
            }
        }

        impl<'a, S, P> tower::Layer<S> for $layer_name<'a, P> {
            type Service = $service<'a, S, P>;
            fn layer(&self, inner: S) -> $service<'a, S, P> {
                $service {
                    state: self.state,
                    inner,
                }
            }
        }

        /// The step as a service over its inner service.
        pub struct $service<'a, S, P = crate::state::AppState> {
            state: &'a std::sync::Arc<P>,
            inner: S,
        }

        impl<S: Clone, P> Clone for $service<'_, S, P> {
            fn clone(&self) -> Self {
                $service {
                    state: self.state,
                    inner: self.inner.clone(),
                }
            }
        }
    };
}
pub(crate) use pipeline_layer;

#[cfg(test)]
pub(crate) mod test_support;
