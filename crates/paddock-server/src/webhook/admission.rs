//! paddock's admission webhook, the I/O around `paddock_core::admission`: its own TLS
//! listener that only the apiserver can call (a client certificate from the configured CA is
//! required at the handshake, and its common name must be an allowed one), the tenant and
//! node lookups, the store claims, and the webhook configurations installed upstream.
//!
//! Every replica serves it the same way: the decisions read only the request, the tenant's
//! record (the store cache every replica keeps current) and, for claims, the store itself
//! (compare-and-swap), so any replica behind the configured URL may answer any review.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use paddock_core::TENANT_LABEL;
use paddock_core::admission::{
    self, AdmissionRequest, Handler, NodeFacts, Outcome, Phase, Platform, Refusal, TenantContext,
};
use paddock_core::catalog::webhook_relay::paddock_client_config;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::state::AppState;
use paddock_upstream::body::full;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::upjson;

/// Name of both webhook configurations paddock installs upstream.
pub const WEBHOOK_CONFIGURATION: &str = "paddock-tenant-policy";
/// Largest AdmissionReview accepted (an object and its old version).
const MAX_REVIEW_BYTES: usize = 16 << 20;
/// The apiserver's wait for an answer (it fails closed after it).
const TIMEOUT_SECONDS: u64 = 5;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The admission listener, ready to serve.
pub struct AdmissionServer {
    listener: TcpListener,
    acceptor: TlsAcceptor,
    /// Whose client certificates the listener accepts (registered clusters are added).
    pub callers: Arc<paddock_pki::callers::AdmissionCallers>,
    handlers: Arc<Vec<Box<dyn Handler>>>,
    /// The URL the webhook configurations name.
    pub url: String,
}

impl AdmissionServer {
    /// Binds the listener when the config asks for one (None otherwise).
    pub async fn bind(config: &crate::ServerConfig) -> Result<Option<Self>, ServerError> {
        let a = &config.admission;
        let (Some(listen), Some(client_ca)) = (a.listen, a.client_ca.as_ref()) else {
            return Ok(None);
        };
        let callers = paddock_pki::callers::AdmissionCallers::new(client_ca)
            .map_err(|e| ServerError::Config(format!("admission TLS: {e}")))?;
        let tls = paddock_pki::admission_server_config(
            &config.serving_cert(),
            &config.serving_key(),
            callers.clone(),
        )
        .map_err(|e| ServerError::Config(format!("admission TLS: {e}")))?;
        let listener = TcpListener::bind(listen).await.map_err(|e| {
            ServerError::Config(format!("admission_listen: cannot bind {listen}: {e}"))
        })?;
        let bound = listener
            .local_addr()
            .map_err(|e| ServerError::Config(format!("admission_listen: {e}")))?;
        Ok(Some(AdmissionServer {
            listener,
            acceptor: TlsAcceptor::from(Arc::new(tls)),
            callers,
            handlers: Arc::new(admission::registry()),
            url: a.url_for(bound),
        }))
    }

    /// Serves until shutdown.
    pub async fn serve(self, state: Arc<AppState>) {
        tracing::info!(url = %self.url, "admission webhook serving");
        loop {
            let (tcp, remote) = tokio::select! {
                r = self.listener.accept() => match r {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(error = %e, "admission accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = state.shutdown.cancelled() => return,
            };
            let (acceptor, state, handlers, callers) = (
                self.acceptor.clone(),
                state.clone(),
                self.handlers.clone(),
                self.callers.clone(),
            );
            tokio::spawn(serve_connection(
                state, handlers, callers, acceptor, tcp, remote,
            ));
        }
    }
}

async fn serve_connection(
    main: Arc<AppState>,
    handlers: Arc<Vec<Box<dyn Handler>>>,
    callers: Arc<paddock_pki::callers::AdmissionCallers>,
    acceptor: TlsAcceptor,
    tcp: tokio::net::TcpStream,
    remote: SocketAddr,
) {
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::info!(%remote, error = %e, "admission caller refused at the TLS handshake");
            return;
        }
        Err(_) => return,
    };
    let chain = tls.get_ref().1.peer_certificates().unwrap_or_default();
    let caller = chain
        .split_first()
        .and_then(|(leaf, rest)| callers.caller_of(leaf, rest, rustls_pki_types::UnixTime::now()));
    // The cluster whose apiserver calls decides the state a review is judged with (its nodes,
    // its upstream); the configured CA's callers must also carry an allowed name.
    let (state, caller_ok) = match caller {
        Some(paddock_pki::callers::Caller::Default) => {
            let name = chain
                .first()
                .and_then(|der| paddock_pki::parse_peer_cert(der.as_ref()).ok())
                .map(|p| p.user);
            let allowed = &main.config.admission.client_names;
            let ok = name
                .as_ref()
                .is_some_and(|n| allowed.is_empty() || allowed.contains(n));
            (main.clone(), ok)
        }
        Some(paddock_pki::callers::Caller::Cluster(c)) => match main.clusters.member(&c) {
            Some(m) => (m.state.clone(), true),
            None => (main.clone(), false),
        },
        None => (main.clone(), false),
    };
    let svc = service_fn(move |req: Request<Incoming>| {
        let (state, handlers) = (state.clone(), handlers.clone());
        async move {
            let resp = if caller_ok {
                handle(&state, &handlers, req)
                    .await
                    .unwrap_or_else(ServerError::into_response)
            } else {
                ServerError::Forbidden(
                    "paddock admission webhook: only the apiserver's client certificate may call it"
                        .into(),
                )
                .into_response()
            };
            Ok::<_, Infallible>(resp)
        }
    });
    if let Err(e) = auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(tls), svc)
        .await
    {
        tracing::debug!(%remote, error = %e, "admission connection ended");
    }
}

async fn handle(
    state: &Arc<AppState>,
    handlers: &[Box<dyn Handler>],
    req: Request<Incoming>,
) -> Result<Response<ResBody>, ServerError> {
    let phase = match (req.method(), req.uri().path()) {
        (_, p) if p.contains(paddock_core::catalog::webhook_relay::RELAY_PATH) => {
            return crate::webhook::relay::serve(state, req).await;
        }
        (&Method::POST, p) if p == Phase::Mutating.path() => Phase::Mutating,
        (&Method::POST, p) if p == Phase::Validating.path() => Phase::Validating,
        (m, p) => {
            return Err(ServerError::NotFound(format!(
                "{m} {p}: the admission webhook serves POST {} and {}",
                Phase::Mutating.path(),
                Phase::Validating.path()
            )));
        }
    };
    let body = collect_limited(req.into_body(), MAX_REVIEW_BYTES).await?;
    let review =
        admission::decode_review(&body).map_err(|e| ServerError::BadRequest(e.to_string()))?;
    let outcome = decide(state, handlers, phase, &review).await;
    if let Outcome::Deny(r) = &outcome {
        tracing::info!(phase = ?phase, namespace = %review.namespace, resource = %review.resource.resource,
            name = %review.name, user = %review.user_info.username, message = %r.message, "admission denied");
    }
    let patch = match &outcome {
        Outcome::Patch(ops) => Some(
            base64::engine::general_purpose::STANDARD.encode(
                serde_json::to_vec(&admission::patch_document(ops))
                    .map_err(|e| ServerError::Internal(e.to_string()))?,
            ),
        ),
        _ => None,
    };
    let answer = admission::review_response(&review.uid, &outcome, patch);
    let bytes = serde_json::to_vec(&answer).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = Response::new(full(bytes));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(r)
}

/// The tenant, the facts, the handlers, the claims: fails closed (a review paddock cannot
/// decide is denied, with the reason).
async fn decide(
    state: &Arc<AppState>,
    handlers: &[Box<dyn Handler>],
    phase: Phase,
    req: &AdmissionRequest,
) -> Outcome {
    let ns = req.tenant_namespace();
    let record = match paddock_core::tenant::tenant_of(ns) {
        Some(t) => match state.cache.tenant(t) {
            Some(r) => Some(r),
            // A tenant created a moment ago through another replica: its first namespaces
            // reach this webhook before the store's watch brings the record to this replica's
            // cache (seen at ~870 tenants, creations four at a time). The store decides.
            None => match state.store.get_tenant(t).await {
                Ok(r) => r.map(Arc::new),
                Err(e) => {
                    return Outcome::Deny(Refusal {
                        code: 500,
                        reason: "InternalError",
                        message: format!(
                            "paddock policy tenant: could not read tenant {t:?} from the store: {e}"
                        ),
                    });
                }
            },
        },
        None => None,
    };
    let Some(record) = record else {
        return Outcome::Deny(Refusal::forbidden(
            "tenant",
            format!(
                "namespace {ns:?} carries the {TENANT_LABEL} label but belongs to no paddock tenant"
            ),
        ));
    };
    let policy = record
        .policy
        .clone()
        .unwrap_or_else(|| state.config.default_policy.clone());
    let node = match admission::scheduling::node_wanted(req) {
        Some(name) => match node_facts(state, name).await {
            Ok(n) => n,
            Err(e) => {
                return Outcome::Deny(Refusal {
                    code: 500,
                    reason: "InternalError",
                    message: format!(
                        "paddock policy scheduling: could not read node {name:?}: {e}"
                    ),
                });
            }
        },
        None => None,
    };
    let platform = Platform {
        cluster_domain: state.config.admission.cluster_domain.clone(),
        // The in-cluster path points pods at paddock's endpoints on the default cluster; a
        // registered cluster's pods keep its own (docs/clusters.md).
        in_cluster: state
            .config
            .admission
            .in_cluster
            .as_ref()
            .filter(|_| {
                state.reconciler.cluster == paddock_core::clusters::cluster::DEFAULT_CLUSTER
            })
            .map(|c| c.pods.clone()),
    };
    let ctx = TenantContext {
        tenant: &record.id,
        policy: &policy,
        platform: &platform,
        node: node.as_ref(),
    };
    let outcome = match admission::run_phase(handlers, phase, req, &ctx) {
        Outcome::Claim(claims) => take_claims(state, req, record.id.as_str(), &claims).await,
        other => other,
    };
    match (phase, outcome) {
        (Phase::Validating, Outcome::Allow) => server_checks(state, &record.id, req).await,
        (_, other) => other,
    }
}

/// Checks that need the store or the upstream once every pure handler of the validating
/// phase allowed (tenant quota, issue 15, plugs in here). The webhook configuration only
/// sends what some registered handler's rules match, so a check here needs a handler in
/// `paddock_core::admission::registry` whose rules cover its requests.
async fn server_checks(
    state: &Arc<AppState>,
    tenant: &paddock_core::TenantId,
    req: &AdmissionRequest,
) -> Outcome {
    if req.operation != "CREATE" || !req.sub_resource.is_empty() {
        return Outcome::Allow;
    }
    // The object's name: generated names are only in the object by now.
    let name = req.object["metadata"]["name"]
        .as_str()
        .unwrap_or(req.name.as_str());
    let create = crate::webhook::quota::Create {
        upstream_group: &req.resource.group,
        resource: &req.resource.resource,
        namespace: &req.namespace,
        name,
        object: &req.object,
        dry_run: req.dry_run,
    };
    match crate::webhook::quota::admit_create(state, tenant, &create).await {
        Ok(()) => Outcome::Allow,
        Err(ServerError::Forbidden(message)) => Outcome::Deny(Refusal {
            code: 403,
            reason: "Forbidden",
            message,
        }),
        // Fail closed: a create the ledger could not record is refused (the store is
        // unreachable, or the ledger kept changing).
        Err(e) => Outcome::Deny(Refusal {
            code: 500,
            reason: "InternalError",
            message: format!("paddock tenant quota: the create could not be charged: {e}"),
        }),
    }
}

/// Takes each claim for the tenant (not on a dry run: nothing may change then).
async fn take_claims(
    state: &Arc<AppState>,
    req: &AdmissionRequest,
    tenant: &str,
    claims: &[admission::Claim],
) -> Outcome {
    if req.dry_run {
        return Outcome::Allow;
    }
    for c in claims {
        match state.store.claim(c.kind, &c.key, tenant).await {
            Ok(holder) if holder == tenant => {}
            // The other tenant is not named: its id is its own.
            Ok(_) => {
                return Outcome::Deny(Refusal::forbidden(
                    c.policy,
                    format!(
                        "host {:?} is already claimed by another tenant (first claim wins)",
                        c.key
                    ),
                ));
            }
            Err(e) => {
                return Outcome::Deny(Refusal {
                    code: 500,
                    reason: "InternalError",
                    message: format!(
                        "paddock policy {}: could not record the claim of {:?}: {e}",
                        c.policy, c.key
                    ),
                });
            }
        }
    }
    Outcome::Allow
}

/// A node's labels and taints (None if there is no such node).
async fn node_facts(state: &Arc<AppState>, name: &str) -> Result<Option<NodeFacts>, ServerError> {
    let a = upjson::call(
        &state.upstream,
        Method::GET,
        &format!("/api/v1/nodes/{}", upjson::query_escape(name)),
        None,
        None,
    )
    .await?;
    if a.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !a.status.is_success() {
        return Err(ServerError::Upstream(a.message()));
    }
    let labels = a.body["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let taints = a.body["spec"]["taints"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    let f = |k: &str| t[k].as_str().unwrap_or_default().to_string();
                    (f("key"), f("value"), f("effect"))
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Some(NodeFacts {
        name: name.to_string(),
        labels,
        taints,
    }))
}

/// The Mutating or Validating webhook configuration calling `url`, trusting `ca_pem`.
pub fn webhook_configuration(phase: Phase, url: &str, ca_pem: &str) -> Value {
    let (kind, hook, side_effects) = match phase {
        Phase::Mutating => (
            "MutatingWebhookConfiguration",
            "mutate.policy.paddock.io",
            "None",
        ),
        // Claims (Ingress hosts) are recorded in paddock's store, never on a dry run.
        Phase::Validating => (
            "ValidatingWebhookConfiguration",
            "validate.policy.paddock.io",
            "NoneOnDryRun",
        ),
    };
    let handlers = admission::registry();
    let mut webhook = json!({
        "name": hook,
        "clientConfig": paddock_client_config(url, phase.path(), ca_pem),
        "rules": admission::phase_rules(&handlers, phase),
        "namespaceSelector": {"matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]},
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "sideEffects": side_effects,
        "timeoutSeconds": TIMEOUT_SECONDS,
        "admissionReviewVersions": ["v1"],
    });
    if phase == Phase::Mutating {
        webhook["reinvocationPolicy"] = json!("IfNeeded");
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": WEBHOOK_CONFIGURATION, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "webhooks": [webhook],
    })
}

/// Installs (or updates) both webhook configurations upstream.
pub async fn install(state: &AppState, url: &str) -> Result<(), ServerError> {
    let ca_pem = std::fs::read_to_string(state.config.ca_cert()).map_err(|e| {
        ServerError::Config(format!("reading {}: {e}", state.config.ca_cert().display()))
    })?;
    for (phase, resource) in [
        (Phase::Mutating, "mutatingwebhookconfigurations"),
        (Phase::Validating, "validatingwebhookconfigurations"),
    ] {
        upjson::apply(
            &state.upstream,
            &format!("/apis/admissionregistration.k8s.io/v1/{resource}/{WEBHOOK_CONFIGURATION}"),
            &webhook_configuration(phase, url, &ca_pem),
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn configurations_are_fail_closed_and_tenant_scoped() {
        let m = webhook_configuration(Phase::Mutating, "https://127.0.0.1:9443/", "PEM");
        let w = &m["webhooks"][0];
        assert_eq!(
            w["clientConfig"]["url"],
            "https://127.0.0.1:9443/admission/mutate"
        );
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(
            w["namespaceSelector"]["matchExpressions"][0]["key"],
            TENANT_LABEL
        );
        assert!(w["rules"].as_array().is_some_and(|r| !r.is_empty()));
        let v = webhook_configuration(Phase::Validating, "https://lb:443", "PEM");
        assert_eq!(v["kind"], "ValidatingWebhookConfiguration");
        assert_eq!(v["webhooks"][0]["sideEffects"], "NoneOnDryRun");
        assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
    }
}
