//! An OIDC bearer token (issue 40): accepted only on a connection whose server name chose a
//! tenant (`<tid>.tenants.paddock.internal`), only if that tenant's policy trusts the token's
//! issuer, and only once the signature (jwks.rs) and the claims (paddock-core
//! `identity::oidc::claims`) pass. Never sent upstream: no TokenReview sees it. A token
//! accepted lately is taken from memory for [`ACCEPTED_TTL`] (never past its `exp`), so that
//! a kubectl burst costs one signature check and one CEL run.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use paddock_core::TenantId;
use paddock_core::identity::Caller;
use paddock_core::identity::oidc::{self, claims};
use paddock_store::TenantPhase;
use paddock_upstream::error::ServerError;

use crate::auth::jwks;
use crate::state::AppState;

/// How long an accepted token is answered from memory (a changed policy or a key removed
/// from the issuer's JWKS applies within this, on top of the JWKS's age).
const ACCEPTED_TTL: Duration = Duration::from_secs(10);
/// Bound on the memory (dropped wholesale beyond it).
const MEMORY_MAX: usize = 10_000;

type Memory = Mutex<HashMap<[u8; 32], (Arc<Caller>, Instant)>>;

fn memory() -> &'static Memory {
    static MEMORY: OnceLock<Memory> = OnceLock::new();
    MEMORY.get_or_init(|| Mutex::new(HashMap::new()))
}

fn unauthorized(why: impl Into<String>) -> ServerError {
    ServerError::Unauthorized(why.into())
}

/// Authenticates an OIDC token of `issuer` on a connection of tenant `context`.
pub async fn authenticate(
    state: &AppState,
    token: &str,
    issuer: &str,
    context: Option<&TenantId>,
) -> Result<Arc<Caller>, ServerError> {
    let Some(tenant) = context else {
        return Err(unauthorized(format!(
            "an OIDC token is accepted only on a tenant's context: the kubeconfig's cluster must set tls-server-name: <tenant id>.{}",
            oidc::TENANT_SERVER_SUFFIX
        )));
    };
    let record = state
        .cache
        .tenant(tenant.as_str())
        .ok_or_else(|| unauthorized(format!("tenant {tenant} does not exist")))?;
    if !matches!(record.phase, TenantPhase::Active | TenantPhase::Suspended) {
        return Err(unauthorized(format!("tenant {tenant} is not active")));
    }
    let policy = record
        .policy
        .as_ref()
        .unwrap_or(&state.config.default_policy);
    let Some(auth) = oidc::trusted(&policy.jwt, issuer) else {
        return Err(unauthorized(format!(
            "tenant {tenant} does not trust the token's issuer {issuer:?}"
        )));
    };
    let mut hasher = Sha256::new();
    hasher.update(tenant.as_str());
    hasher.update([0]);
    hasher.update(token);
    let key: [u8; 32] = hasher.finalize().into();
    let now = Instant::now();
    if let Some((caller, until)) = memory().lock().get(&key)
        && now < *until
    {
        return Ok(caller.clone());
    }
    let claims = jwks::verify(&auth.issuer, token)
        .await
        .map_err(unauthorized)?;
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    let user = claims::check_and_map(auth, &claims, secs).map_err(|e| unauthorized(e.0))?;
    tracing::debug!(tenant = %tenant, user = %user.username, "OIDC token accepted");
    let caller = Arc::new(Caller::Tenant {
        tenant: tenant.clone(),
        user: user.username.as_str().into(),
        groups: user.groups.into(),
        serial: format!(
            "{}{}",
            paddock_core::identity::OIDC_SERIAL_PREFIX,
            claims["sub"].as_str().unwrap_or_default()
        ),
    });
    // Remembered no longer than the token lives.
    let left = claims["exp"]
        .as_i64()
        .map(|exp| Duration::from_secs(u64::try_from(exp - secs).unwrap_or(0)))
        .unwrap_or_default();
    let mut m = memory().lock();
    if m.len() >= MEMORY_MAX {
        m.clear();
    }
    m.insert(key, (caller.clone(), now + ACCEPTED_TTL.min(left)));
    Ok(caller)
}
