//! Who is calling: the client certificate (parsed once per connection) checked against the
//! store cache on every request, so a revocation or a tenant suspension applies to open
//! connections too, within the cache's propagation time.

pub mod jwks;
pub mod oidc;
pub mod seen;
pub mod token_gate;

use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use http::{HeaderMap, Method, Request, header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use paddock_core::TenantId;
use paddock_core::fair::refusal::Refusal;
use paddock_core::identity::oidc::TokenKind;
use paddock_pki::PeerCert;
use paddock_store::{StoreCache, TenantPhase};

use crate::auth::token_gate::Gate;
use crate::state::AppState;
use paddock_core::identity::Caller;
use paddock_upstream::error::ServerError;

/// A connection's client certificate, and the caller it names once a request has been
/// authenticated with it: every later request on the connection repeats the checks
/// (validity, revocation, the tenant's phase) but not the copying of names and groups.
#[derive(Debug)]
pub struct Peer {
    cert: Arc<PeerCert>,
    caller: OnceLock<Arc<Caller>>,
}

impl Peer {
    pub fn new(cert: PeerCert) -> Self {
        Peer {
            cert: Arc::new(cert),
            caller: OnceLock::new(),
        }
    }

    pub fn cert(&self) -> &Arc<PeerCert> {
        &self.cert
    }
}

/// Authenticates one request from the connection's peer certificate.
pub fn authenticate(
    peer: Option<&Peer>,
    cache: &StoreCache,
    now: SystemTime,
) -> Result<Arc<Caller>, ServerError> {
    let Some(peer) = peer else {
        return Err(ServerError::Unauthorized(
            "a client certificate issued by paddock is required".into(),
        ));
    };
    let cert = &*peer.cert;
    if now > cert.not_after {
        return Err(ServerError::Unauthorized(format!(
            "the client certificate (serial {}) has expired; ask the platform admin for a new one",
            cert.serial_hex
        )));
    }
    if now < cert.not_before {
        return Err(ServerError::Unauthorized(format!(
            "the client certificate (serial {}) is not valid yet",
            cert.serial_hex
        )));
    }
    if cache.is_revoked(&cert.serial_hex) {
        return Err(ServerError::Unauthorized(format!(
            "the client certificate (serial {}) has been revoked",
            cert.serial_hex
        )));
    }
    let Some(tid) = &cert.tenant else {
        return Ok(peer
            .caller
            .get_or_init(|| {
                Arc::new(Caller::Admin {
                    user: cert.user.clone(),
                    serial: cert.serial_hex.clone(),
                })
            })
            .clone());
    };
    let tenant = TenantId::parse(tid).map_err(|_| {
        ServerError::Unauthorized(format!(
            "the client certificate names an invalid tenant {tid:?}"
        ))
    })?;
    match cache.tenant(tenant.as_str()).map(|rec| rec.phase) {
        None => Err(ServerError::Unauthorized(format!(
            "tenant {tenant} does not exist"
        ))),
        // A suspended tenant still reads; its writes are refused at the door (crate::lifecycle).
        Some(TenantPhase::Active | TenantPhase::Suspended) => Ok(peer
            .caller
            .get_or_init(|| {
                Arc::new(Caller::Tenant {
                    tenant,
                    user: cert.user.as_str().into(),
                    groups: cert.groups.as_slice().into(),
                    serial: cert.serial_hex.clone(),
                })
            })
            .clone()),
        Some(TenantPhase::Terminating) => Err(ServerError::Unauthorized(format!(
            "tenant {tenant} is being deleted"
        ))),
    }
}

/// The tenant a connection's server name (SNI) chose, if it named one
/// (`paddock_core::identity::oidc::context_tenant`); `Err` for a name under the tenants'
/// suffix that names none.
pub type Context = Option<Arc<Result<TenantId, String>>>;

/// Authenticates one request: the client certificate when there is one (a bearer token is
/// then ignored and never forwarded), else its bearer token: a tenant pod's service-account
/// token (TokenReview upstream) or an OIDC token (checked here, never sent upstream), told
/// apart from the token's payload before any upstream call. A request acts only in the
/// tenant its connection's server name chose, when it chose one.
pub async fn authenticate_request(
    state: &AppState,
    peer: Option<&Peer>,
    context: &Context,
    headers: &HeaderMap,
) -> Result<Arc<Caller>, ServerError> {
    let context = match context.as_deref() {
        Some(Err(why)) => return Err(ServerError::Unauthorized(why.clone())),
        Some(Ok(t)) => Some(t),
        None => None,
    };
    let caller = if peer.is_some() {
        authenticate(peer, &state.cache, SystemTime::now())?
    } else {
        match bearer(headers) {
            Some(t) => match paddock_core::identity::oidc::token_kind(t) {
                TokenKind::Oidc { issuer } => {
                    return paddock_upstream::rare::boxed(|| {
                        oidc::authenticate(state, t, &issuer, context)
                    })
                    .await;
                }
                // Boxed: the TokenReview's future (3.5 KB) would otherwise be part of every
                // request's.
                TokenKind::ServiceAccount => {
                    paddock_upstream::rare::boxed(|| authenticate_token(state, t))
                        .await
                        .map(Arc::new)?
                }
                TokenKind::Unreadable => {
                    return Err(ServerError::Unauthorized(
                        "the bearer token is neither a service account token nor an OIDC token"
                            .into(),
                    ));
                }
            },
            None => authenticate(None, &state.cache, SystemTime::now())?,
        }
    };
    // A certificate or a pod's token names its tenant itself: it must be the context's.
    if let (Some(want), Caller::Tenant { tenant, .. }) = (context, &*caller)
        && want != tenant
    {
        return Err(ServerError::Unauthorized(format!(
            "the credential is tenant {tenant}'s, but the connection's server name chose tenant {want}"
        )));
    }
    Ok(caller)
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// A tenant pod's service-account token, verified by the upstream's TokenReview API (paddock
/// never holds the upstream's signing key). Only service accounts in a namespace of an active
/// or suspended tenant (whose writes the door refuses) are accepted; the tenant is the
/// namespace's owner. Tokens of platform service accounts (any namespace that is not a
/// tenant's) are refused.
pub async fn authenticate_token(state: &AppState, token: &str) -> Result<Caller, ServerError> {
    if !token_gate::looks_like_service_account_token(token) {
        return Err(ServerError::Unauthorized(
            "the bearer token is not a service account token".into(),
        ));
    }
    let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let cfg = &state.config.connections;
    let result = match token_gate::check(&key, cfg.token_review_qps, cfg.token_review_burst) {
        Gate::Known(r) => r,
        Gate::Review => {
            let r = review_token(state, token).await?;
            token_gate::remember(key, r.clone());
            r
        }
        Gate::Busy(retry_after) => {
            let refusal = Refusal::token_reviews(cfg.token_review_qps, retry_after);
            state.metrics.limit_refused(refusal.limit);
            return Err(ServerError::TooManyRequests(refusal));
        }
    };
    let (tenant, user) = result.map_err(ServerError::Unauthorized)?;
    // The tenant's state is checked on every request, like for certificates.
    match state.cache.tenant(tenant.as_str()).map(|r| r.phase) {
        Some(TenantPhase::Active | TenantPhase::Suspended) => Ok(Caller::Tenant {
            tenant,
            user: user.into(),
            groups: Arc::from([]),
            serial: paddock_core::identity::SERVICE_ACCOUNT_SERIAL.into(),
        }),
        Some(_) => Err(ServerError::Unauthorized(format!(
            "tenant {tenant} is not active"
        ))),
        None => Err(ServerError::Unauthorized(
            "the service account token does not belong to a tenant".into(),
        )),
    }
}

/// The TokenReview on the default cluster, then on each registered cluster that answers (a
/// pod's token is signed by its own cluster); `Ok(Err(reason))` is a refusal (cached like a
/// success). A token a registered cluster vouches for is accepted only for a tenant that
/// lives on that cluster, its namespace there carrying the tenant's label.
async fn review_token(
    state: &AppState,
    token: &str,
) -> Result<Result<(TenantId, String), String>, ServerError> {
    let first = review_token_on(state, token).await?;
    if first.is_ok() {
        return Ok(first);
    }
    for (name, member) in state.clusters.members().iter() {
        if !member.state.health.is_healthy() {
            continue;
        }
        let Ok(Ok((tenant, user))) = review_token_on(&member.state, token).await else {
            continue;
        };
        if state
            .cache
            .tenant(tenant.as_str())
            .is_some_and(|r| r.lives_on(name))
        {
            return Ok(Ok((tenant, user)));
        }
    }
    Ok(first)
}

/// One TokenReview on one cluster.
async fn review_token_on(
    state: &AppState,
    token: &str,
) -> Result<Result<(TenantId, String), String>, ServerError> {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    let bytes = serde_json::to_vec(&body).map_err(|e| ServerError::Internal(e.to_string()))?;
    let req = Request::builder()
        .method(Method::POST)
        .uri(
            state
                .upstream
                .uri("/apis/authentication.k8s.io/v1/tokenreviews")?,
        )
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(paddock_upstream::body::full_up(bytes::Bytes::from(bytes)))
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let resp = state
        .upstream
        .send(req, paddock_upstream::upstream::Route::Short)
        .await?;
    let status = resp.status();
    let raw = paddock_upstream::limit::collect_limited(resp.into_body(), 1 << 20).await?;
    if !status.is_success() {
        return Err(ServerError::Upstream(format!(
            "TokenReview upstream failed: {status}"
        )));
    }
    let v: Value = serde_json::from_slice(&raw)
        .map_err(|e| ServerError::Upstream(format!("TokenReview: {e}")))?;
    if v["status"]["authenticated"].as_bool() != Some(true) {
        return Ok(Err("the bearer token is not valid".into()));
    }
    let username = v["status"]["user"]["username"].as_str().unwrap_or_default();
    Ok(map_service_account(state, username).await)
}

/// `system:serviceaccount:<tid>-<ns>:<sa>` -> (tenant, `system:serviceaccount:<ns>:<sa>`), if
/// the namespace exists upstream and carries the tenant's label.
async fn map_service_account(
    state: &AppState,
    username: &str,
) -> Result<(TenantId, String), String> {
    let refuse = || {
        format!(
            "only service accounts of tenant namespaces can use paddock (token of {username:?})"
        )
    };
    let rest = username
        .strip_prefix("system:serviceaccount:")
        .ok_or_else(refuse)?;
    let (up_ns, sa) = rest.split_once(':').ok_or_else(refuse)?;
    let tid = up_ns
        .get(..6)
        .filter(|_| up_ns.as_bytes().get(6) == Some(&b'-'))
        .ok_or_else(refuse)?;
    let tenant = TenantId::parse(tid).map_err(|_| refuse())?;
    let ns = tenant.strip(up_ns).ok_or_else(refuse)?;
    let owner = paddock_upstream::upjson::call(
        &state.upstream,
        Method::GET,
        &format!("/api/v1/namespaces/{up_ns}"),
        None,
        None,
    )
    .await
    .map_err(|e| format!("checking the namespace of the service account: {e}"))?;
    if owner.body["metadata"]["labels"][paddock_core::TENANT_LABEL].as_str()
        != Some(tenant.as_str())
    {
        return Err(refuse());
    }
    Ok((tenant.clone(), format!("system:serviceaccount:{ns}:{sa}")))
}
