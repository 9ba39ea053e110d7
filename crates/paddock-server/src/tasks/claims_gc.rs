//! Returns Ingress-host claims nobody uses any more (docs/security.md "Ingress hosts").
//!
//! A claim is taken when the admission webhook admits an Ingress naming the host, and kept
//! while any Ingress of the holder names it. Each pass lists the claims, then every Ingress
//! upstream (paddock's own credential); a claim that no Ingress of its holder names is a
//! candidate, and a candidate still unused in the next pass, unchanged in the store, is
//! released (compare-and-swap: never a claim re-taken meanwhile). Two passes apart, an Ingress
//! whose admission took the claim has long been stored, so only claims whose Ingress is gone,
//! or whose create a later admission step refused, are returned. The leader sweeps
//! (docs/operations.md "Leadership"); the store's compare-and-swap keeps two sweeps at once
//! harmless all the same.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::admission::traffic::{INGRESS_HOST_CLAIM, ingress_hosts_in_use};
use paddock_store::ClaimEntry;

use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;

const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);

/// While this replica leads, sweeps every `admission.claims_gc_interval`, until shutdown.
pub async fn sweep_loop(state: Arc<AppState>) {
    let leadership = state.leadership.clone();
    leadership
        .while_leader("Ingress-host claims sweep", &state.shutdown, || {
            sweep_leading(state.clone())
        })
        .await;
}

async fn sweep_leading(state: Arc<AppState>) {
    let interval = state
        .config
        .admission
        .claims_gc_interval
        .unwrap_or(DEFAULT_INTERVAL);
    let mut unused_last_pass = HashSet::new();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = state.shutdown.cancelled() => return,
        }
        match sweep(&state, &unused_last_pass).await {
            Ok(unused) => unused_last_pass = unused,
            Err(e) => {
                tracing::warn!(error = %e, "Ingress-host claims not swept; next pass retries")
            }
        }
    }
}

/// One pass: releases the claims unused now and in the previous pass; returns the claims
/// unused now (the next pass's candidates).
async fn sweep(
    state: &AppState,
    unused_last_pass: &HashSet<ClaimEntry>,
) -> Result<HashSet<ClaimEntry>, ServerError> {
    let claims = state.store.list_claims(INGRESS_HOST_CLAIM).await?;
    if claims.is_empty() {
        return Ok(HashSet::new());
    }
    // Every cluster whose apiserver calls the webhook holds Ingresses that keep claims: a
    // cluster that cannot be read makes this pass end with nothing returned (a claim is
    // never returned on a partial view).
    let path = "/apis/networking.k8s.io/v1/ingresses";
    let mut ingresses = upjson::list(&state.upstream, path).await?;
    for m in state.clusters.members().values() {
        if m.record.admission_client_ca_pem.is_some() {
            ingresses.extend(upjson::list(&m.state.upstream, path).await?);
        }
    }
    let in_use = ingress_hosts_in_use(&ingresses);
    let mut unused = HashSet::new();
    for claim in claims {
        if in_use.contains(&(claim.tenant.clone(), claim.key.clone())) {
            continue;
        }
        if unused_last_pass.contains(&claim) {
            if state
                .store
                .release_claim(INGRESS_HOST_CLAIM, &claim)
                .await?
            {
                tracing::info!(tenant = %claim.tenant, host = %claim.key, "Ingress host claim returned: no Ingress of the tenant names it");
            }
        } else {
            unused.insert(claim);
        }
    }
    Ok(unused)
}
